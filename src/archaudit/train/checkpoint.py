"""Atomic, checksummed checkpoints, and loading a trained model back for evaluation.

Layout: `<run>/checkpoint/step-000100/{state.pt, state.sha256}`. A checkpoint is written into a
hidden temporary folder and renamed into place, so a crash mid-write leaves no half checkpoint
under a real name. On load, the newest checkpoint whose checksum verifies wins; a truncated or
corrupted one is skipped with a warning and the previous one used.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from archaudit.config import ModelConfig, build
from archaudit.data.tokenizers import Tokenizer, load_tokenizer
from archaudit.errors import DataError
from archaudit.model import Transformer, build_model
from archaudit.progress import warn

STATE, CHECKSUM = "state.pt", "state.sha256"


def rng_state() -> dict[str, Any]:
    state = {
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(folder: Path, step: int, state: dict[str, Any], keep: int) -> Path:
    """Write `state` as checkpoint `step` atomically; keep the newest `keep` checkpoints."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"step-{step:06d}"
    tmp = folder / f".tmp-step-{step:06d}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    torch.save(state, tmp / STATE)
    (tmp / CHECKSUM).write_text(_sha256(tmp / STATE))
    _fsync(tmp / STATE)
    if final.exists():  # a re-save of the same step (e.g. after resume at a checkpoint boundary)
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in list_checkpoints(folder)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def list_checkpoints(folder: Path) -> list[Path]:
    """Checkpoint folders, oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name.startswith("step-"))


def load_latest(folder: Path, map_location: str | torch.device = "cpu") -> dict[str, Any] | None:
    """The newest checkpoint that verifies, or None. Bad ones are reported and skipped."""
    for ckpt in reversed(list_checkpoints(folder)):
        problem = verify(ckpt)
        if problem is None:
            return torch.load(ckpt / STATE, map_location=map_location, weights_only=False)
        warn(f"checkpoint {ckpt} {problem}; falling back to an earlier one")
    return None


def verify(ckpt: Path) -> str | None:
    """None when the checkpoint is whole, else what is wrong with it."""
    state_file, sum_file = ckpt / STATE, ckpt / CHECKSUM
    if not (state_file.is_file() and sum_file.is_file()):
        return "is incomplete"
    if _sha256(state_file) != sum_file.read_text().strip():
        return "fails its checksum (truncated or corrupted)"
    return None


def load_model(
    path: str | Path, device: str | torch.device = "cpu"
) -> tuple[Transformer, Tokenizer]:
    """Load a trained model for evaluation: `path` is a run directory (its newest valid
    checkpoint) or one `step-*` checkpoint folder. Returns (model in eval mode, tokenizer)."""
    path = Path(path)
    run = path.parent.parent if path.name.startswith("step-") else path
    spec_file = run / "spec.json"
    if not spec_file.is_file():
        raise DataError(f"{path} is not an archaudit run directory (no spec.json in {run})")
    spec = json.loads(spec_file.read_text())
    cfg = build(ModelConfig, spec["model"], section="model")
    if path.name.startswith("step-"):
        problem = verify(path)
        if problem is not None:
            raise DataError(f"checkpoint {path} {problem}")
        state = torch.load(path / STATE, map_location="cpu", weights_only=False)
    else:
        state = load_latest(run / "checkpoint")
    if state is None:
        raise DataError(f"{run} has no valid checkpoint to evaluate")
    model = build_model(cfg)
    model.load_state_dict(state["model"])
    model.to(device).eval()
    tok_file = run / "tokenizer.json"
    tokenizer = load_tokenizer(f"hf:{tok_file}" if tok_file.is_file() else spec["tokenizer"])
    return model, tokenizer


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())
