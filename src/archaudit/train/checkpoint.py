"""What a training checkpoint holds, and putting it back: weights, optimizer, the callbacks' states
(the stability monitor's), step and every RNG state (torch, CUDA, numpy, Python), so that a
resumed run continues exactly where the saved one stood. The file format (safetensors,
weights-only state, checksums) is `archaudit.checkpoint_io`'s."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from archaudit import checkpoint_io
from archaudit.errors import DataError
from archaudit.rundir import TRAIN_STATE, checkpoint_step
from archaudit.train.distributed import World, barrier, full_state, load_full_state


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class TrainingState:
    """The objects a checkpoint saves and restores, as the trainer holds them."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    extra: Mapping[str, Stateful]
    """Callbacks' states by key, in meta.json (e.g. `monitor`)."""


def save(run_dir: Path, step: int, state: TrainingState, *, keep: int, world: World) -> None:
    """Checkpoint `state` as it stands after `step` optimizer updates. Every rank calls this
    (sharded state is gathered); rank 0 writes full, name-keyed state that any number of
    ranks can resume from."""
    weights, optimizer = full_state(state.model, state.optimizer)
    if world.is_main:
        for later in tied_names(state.model).values():
            for name in later:
                del weights[name]
        train_state = {"step": step, "optimizer": optimizer, "rng": rng_state()}
        meta = {key: part.state_dict() for key, part in state.extra.items()}
        checkpoint_io.write(run_dir, step, weights, train_state, meta, keep=keep)
    barrier(world)


def resume(run_dir: Path, state: TrainingState) -> int:
    """Restore `state` from the run's newest valid checkpoint; the step it holds (0: none).
    The step is the folder's, and meta.json and the train state must say the same."""
    checkpoint_io.remove_partial(run_dir)
    ckpt = checkpoint_io.newest(run_dir)
    if ckpt is None:
        return 0
    meta = checkpoint_io.read_meta(ckpt)
    train_state = checkpoint_io.read_train_state(ckpt)
    step = _checked_train_state(ckpt, train_state)
    weights = checkpoint_io.read_weight_file(ckpt)
    for first, later in tied_names(state.model).items():
        group = (first, *later)  # the file holds one name of each tied group
        kept = [weights[name] for name in group if name in weights]
        if kept:
            weights.update(dict.fromkeys(group, kept[0]))
    try:
        load_full_state(state.model, state.optimizer, weights, train_state["optimizer"])
    except (RuntimeError, KeyError, ValueError) as err:
        first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
        message = f"checkpoint {ckpt} does not fit the run's model config: {first_line}"
        raise DataError(message) from None
    try:
        for key, part in state.extra.items():
            part.load_state_dict(meta[key])
        set_rng_state(train_state["rng"])
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise DataError(
            f"checkpoint {ckpt}: its callback (monitor) or RNG state is unreadable ({err!r})"
        ) from None
    return step


def _checked_train_state(ckpt: Path, train_state: dict[str, Any]) -> int:
    """The step the train state records, which must be the folder's; a checkpoint written
    before the train state carried its step is taken at its (already checked) folder name."""
    missing = [key for key in ("optimizer", "rng") if key not in train_state]
    if missing:
        raise DataError(f"checkpoint {ckpt}: {TRAIN_STATE} lacks {', '.join(missing)}")
    step = train_state.get("step", checkpoint_step(ckpt))
    return checkpoint_io.check_step(ckpt, TRAIN_STATE, step)


def tied_names(model: nn.Module) -> dict[str, list[str]]:
    """{first name: later names} of parameters reachable under several names (a tied head)."""
    groups: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        groups.setdefault(id(param), []).append(name)
    return {names[0]: names[1:] for names in groups.values() if len(names) > 1}


def rng_state() -> dict[str, Any]:
    """Every RNG as tensors and plain values (what torch.load(weights_only=True) reads)."""
    legacy = np.random.get_state(legacy=True)
    assert isinstance(legacy, tuple)  # legacy=True: ("MT19937", keys, pos, has_gauss, gauss)
    _, keys, pos, has_gauss, gauss = legacy
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
