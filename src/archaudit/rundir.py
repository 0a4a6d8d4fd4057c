"""The run directory's layout: every name the trainer, the audit and the evaluators read or write.

    <run>/spec.json          resolved model config, recipe, recipe hash, seed, corpus (trainer)
          env.json           library versions, device, source hash                   (trainer)
          metrics.jsonl      one row per step                                         (trainer)
          events.jsonl       spikes, rising gradient norm, divergence                 (trainer)
          tokenizer.json     a trained BPE or Hugging Face tokenizer                  (trainer)
          checkpoint/step-000100/   one folder per saved step      (checkpoint_io.py)
          train.json         the training summary, written last by the trainer
          run.json           the audit's RunSpec                                      (audit)
          claim.<n>          who runs it now                                (audit/claims.py)
          attempts.jsonl     one line per start: pid, host, the step it resumed from  (audit)
          evals.json         the suite's result with per-item outputs                 (audit)
          DONE               the audit's result record, written last                  (audit)
          FAILED             the error of the last failed attempt                     (audit)

Other modules ask this one rather than spelling names, so the layout changes in one place.
"""

from __future__ import annotations

import re
from pathlib import Path

SPEC = "spec.json"
ENV = "env.json"
METRICS = "metrics.jsonl"
EVENTS = "events.jsonl"
TOKENIZER = "tokenizer.json"
TRAIN_RESULT = "train.json"
CHECKPOINTS = "checkpoint"
RUN_FILE = "run.json"
CLAIM_PREFIX = "claim."
ATTEMPTS = "attempts.jsonl"
EVALS = "evals.json"
DONE = "DONE"
FAILED = "FAILED"

# inside one checkpoint folder (the format: checkpoint_io.py)
WEIGHTS = "model.safetensors"
TRAIN_STATE = "train_state.pt"
CHECKPOINT_META = "meta.json"
CHECKSUMS = "SHA256SUMS"
LEGACY_STATE = "state.pt"  # the pickled format of archaudit 0.1, refused on load

_CHECKPOINT_NAME = re.compile(r"step-(\d{6,})")


def checkpoint_name(step: int) -> str:
    """`step-000100`: zero-padded so that a listing sorts by step up to a million steps."""
    return f"step-{step:06d}"


def checkpoint_step(path: str | Path) -> int | None:
    """The step of a checkpoint folder's name, or None when the name is not one."""
    match = _CHECKPOINT_NAME.fullmatch(Path(path).name)
    return int(match[1]) if match else None


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    """A run's checkpoint folders, oldest step first (temporary folders left out)."""
    folder = run_dir / CHECKPOINTS
    if not folder.is_dir():
        return []
    steps = {p: checkpoint_step(p) for p in folder.iterdir() if p.is_dir()}
    found = sorted((step, p) for p, step in steps.items() if step is not None)
    return [p for _, p in found]


def run_dir_of(path: Path) -> Path:
    """The run directory of `path`, which is a run directory or one of its checkpoint folders."""
    return path.parent.parent if checkpoint_step(path) is not None else path
