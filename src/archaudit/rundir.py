"""The run directory's layout: every name the trainer, the audit and the evaluators read or write.

    <run>/spec.json          resolved model config, recipe, recipe hash, seed, corpus (trainer)
          env.json           library versions, device, source hash                   (trainer)
          metrics.jsonl      one row per step                                         (trainer)
          events.jsonl       spikes, rising gradient norm, divergence                 (trainer)
          tokenizer.json     a trained BPE or Hugging Face tokenizer                  (trainer)
          checkpoint/step-000100/   one folder per saved step      (checkpoint_io.py)
          train.json         the training summary, written last by the trainer
          run.json           the audit's RunSpec                                      (audit)
          claim.<n>          who runs it now                                (audit/grid/claims.py)
          attempts.jsonl     one line per start: pid, host, the step it resumed from  (audit)
          evals.json         the suite's result with per-item outputs                 (audit)
          DONE               the audit's result record, written last                  (audit)
          FAILED             the error of the last failed attempt                     (audit)

    <audit>/audit.json       the plan; marks a folder as an audit directory (audit/grid/store.py)

A folder is a run of this tool when it holds spec.json (the trainer's) or run.json (the
audit's); `train` and `status` refuse any other non-empty folder rather than write into it. No
name of the layout may be a link that leads out of the run: deleting old checkpoints or
appending to a log through one would change files the run does not own.

Other modules ask this one rather than spelling names, so the layout changes in one place.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from archaudit.errors import DataError
from archaudit.files import read_json_object, refuse_link

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
AUDIT_FILE = "audit.json"
LAYOUT: tuple[str, ...] = (SPEC, ENV, METRICS, EVENTS, TOKENIZER, TRAIN_RESULT, CHECKPOINTS)
LAYOUT += (RUN_FILE, ATTEMPTS)
LAYOUT += (EVALS, DONE, FAILED)

# inside one checkpoint folder (the format: checkpoint_io.py)
WEIGHTS = "model.safetensors"
TRAIN_STATE = "train_state.pt"
CHECKPOINT_META = "meta.json"
CHECKSUMS = "SHA256SUMS"

_CHECKPOINT_NAME = re.compile(r"step-(\d{6,})")


def checkpoint_name(step: int) -> str:
    """`step-000100`: zero-padded so that a listing sorts by step up to a million steps."""
    return f"step-{step:06d}"


def checkpoint_step(path: str | Path) -> int | None:
    """The step of a checkpoint folder's name, or None when the name is not one."""
    match = _CHECKPOINT_NAME.fullmatch(Path(path).name)
    return int(match[1]) if match else None


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    """A run's checkpoint folders, oldest step first (temporary folders left out). A link
    out of the run is refused, naming it."""
    folder = inside(run_dir, run_dir / CHECKPOINTS)
    if not folder.is_dir():
        return []
    steps = {inside(run_dir, p): checkpoint_step(p) for p in folder.iterdir() if p.is_dir()}
    found = sorted((step, p) for p, step in steps.items() if step is not None)
    return [p for _, p in found]


def run_dir_of(path: Path) -> Path:
    """The run directory of `path`, which is a run directory or one of its checkpoint folders."""
    return path.parent.parent if checkpoint_step(path) is not None else path


def is_run_dir(path: Path) -> bool:
    """Whether `path` holds a run of this tool (the trainer's spec.json or the audit's run.json)."""
    return (path / SPEC).is_file() or (path / RUN_FILE).is_file()


def is_audit_dir(path: Path) -> bool:
    return (path / AUDIT_FILE).is_file()


def check_train_target(out: Path) -> None:
    """Refuse to train into `out` when it is a file, or a non-empty folder that is not a run
    of this tool (its files would be overwritten, appended to or pruned as old checkpoints);
    refuse a name of the layout that links out of the run."""
    refuse_link(out, "--out")
    if out.exists() and not out.is_dir():
        raise DataError(f"{out} is a file, not a run directory: give --out a new or run folder")
    if out.is_dir() and not is_run_dir(out) and any(out.iterdir()):
        raise DataError(
            f"{out} is a non-empty folder that is not a run of archaudit (no {SPEC} or "
            f"{RUN_FILE}); give --out a new or empty folder, or the run's own directory"
        )
    for name in LAYOUT:
        inside(out, out / name)
    if (out / CHECKPOINTS).exists() and not (out / CHECKPOINTS).is_dir():
        raise DataError(f"{out / CHECKPOINTS} is a file where the run keeps its checkpoints")


AUDIT_KEYS = {"name": str, "runs": list}
"""What every audit.json holds (audit/grid/store.py's `materialize`); `{}` is not an audit."""


def check_audit_dir(path: Path) -> Path:
    """`path` when it is an audit directory of this tool, else a one-line refusal (`status`
    rewrites results.csv and items.csv there)."""
    problem = _audit_problem(path)
    if problem:
        raise DataError(f"{problem}; give the audit file or its runs/<audit> folder")
    return path


def check_audit_target(path: Path) -> None:
    """Before an audit materialises into `path`: a new or empty folder, or an audit directory
    of this tool (`--runs-dir` over a foreign folder would overwrite its results.csv)."""
    refuse_link(path, "--runs-dir")
    if path.exists() and not path.is_dir():
        raise DataError(f"{path} is a file where the audit's folder goes: give --runs-dir another")
    problem = _audit_problem(path) if path.is_dir() and any(path.iterdir()) else None
    if problem and not _holds_only_audits(path):
        raise DataError(f"{problem}, and it is not empty; give --runs-dir another folder")


def _holds_only_audits(path: Path) -> bool:
    """Whether every entry of `path` is an audit directory of this tool: `stress` keeps its
    sweep as one inside the audit's folder (`_stress/`), which `run` then fills beside it."""
    entries = list(path.iterdir())
    return all(e.is_dir() and not e.is_symlink() and _audit_problem(e) is None for e in entries)


def _audit_problem(path: Path) -> str | None:
    """Why `path` is not an audit directory of this tool, or None."""
    record_path = path / AUDIT_FILE
    if record_path.is_symlink():
        return f"{record_path} is a link, not an audit.json archaudit wrote"
    record = read_json_object(record_path) if is_audit_dir(path) else None
    if record is None:
        return f"{path} is not an audit directory of archaudit (no {AUDIT_FILE})"
    missing = [key for key, kind in AUDIT_KEYS.items() if not isinstance(record.get(key), kind)]
    if missing:
        return f"{record_path} has no {missing[0]!r}: not an audit.json archaudit wrote"
    return None


def inside(run_dir: Path, path: Path) -> Path:
    """`path` when it does not lead out of `run_dir` through a link, else a refusal naming it."""
    if os.path.islink(path) and not Path(os.path.realpath(path)).is_relative_to(
        os.path.realpath(run_dir)
    ):
        raise DataError(
            f"{path} is a link to {os.path.realpath(path)}, outside the run {run_dir}; archaudit "
            "never writes or deletes through a link out of a run (replace it with a folder)"
        )
    return path
