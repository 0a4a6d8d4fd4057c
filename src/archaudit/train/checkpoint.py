"""What a training checkpoint holds, and putting it back: weights, optimizer, stability monitor,
step and every RNG state (torch, CUDA, numpy, Python), so that a resumed run continues exactly
where the saved one stood. The file format (safetensors, weights-only state, checksums) is
`archaudit.checkpoint_io`'s."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from archaudit import checkpoint_io
from archaudit.train.monitor import StabilityMonitor


@dataclass(frozen=True)
class TrainingState:
    """The objects a checkpoint saves and restores, as the trainer holds them."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    monitor: StabilityMonitor


def save(run_dir: Path, step: int, state: TrainingState, *, keep: int) -> Path:
    """Checkpoint `state` as it stands after `step` optimizer updates."""
    train_state = {"optimizer": state.optimizer.state_dict(), "rng": rng_state()}
    meta = {"monitor": state.monitor.state_dict()}
    return checkpoint_io.write(run_dir, step, state.model, train_state, meta, keep=keep)


def resume(run_dir: Path, state: TrainingState) -> int:
    """Restore `state` from the run's newest valid checkpoint; the step it holds (0: none)."""
    ckpt = checkpoint_io.newest(run_dir)
    if ckpt is None:
        return 0
    meta = checkpoint_io.read_meta(ckpt)
    train_state = checkpoint_io.read_train_state(ckpt)
    checkpoint_io.read_weights(state.model, ckpt)
    state.optimizer.load_state_dict(train_state["optimizer"])
    state.monitor.load_state_dict(meta["monitor"])
    set_rng_state(train_state["rng"])
    return int(meta["step"])


def rng_state() -> dict[str, Any]:
    """Every RNG as tensors and plain values (what torch.load(weights_only=True) reads)."""
    _, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": (torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss),
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state(("MT19937", keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
