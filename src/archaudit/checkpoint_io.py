"""The checkpoint format: one folder per saved step, holding nothing that runs code when loaded.

    checkpoint/step-000100/model.safetensors   the weights: safetensors, readable by any tool
                           train_state.pt      optimizer and RNG state: tensors and plain
                                               containers, read with torch.load(weights_only=True)
                           meta.json           format, step, and JSON state (the monitor)
                           SHA256SUMS          sha256 of the three files (`sha256sum -c` checks it)

A checkpoint is written into a hidden temporary folder and renamed into place, so a crash
mid-write leaves no half checkpoint under a real name. Reading takes the newest folder whose
sums verify; a truncated or corrupted one is skipped with a warning. A file that would need
unpickling (a planted payload) is refused: unpickling runs whatever code the file names.
Only the files listed in the checksum list are ever opened. This module sits below both the
trainer and the evaluators, so neither imports the other.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import safetensors.torch
import torch
from safetensors import SafetensorError
from torch import nn

from archaudit.errors import DataError
from archaudit.files import read_json_object
from archaudit.progress import warn
from archaudit.rundir import (
    CHECKPOINT_META,
    CHECKPOINTS,
    CHECKSUMS,
    TRAIN_STATE,
    WEIGHTS,
    checkpoint_dirs,
    checkpoint_name,
    checkpoint_step,
    inside,
)

FORMAT = 2
FILES = (WEIGHTS, TRAIN_STATE, CHECKPOINT_META)
PARTIAL_PREFIX = ".tmp-"
"""A checkpoint being written: `.tmp-step-000100-<pid>`, renamed to `step-000100` when whole."""


def write(
    run_dir: Path,
    step: int,
    weights: dict[str, torch.Tensor],
    train_state: dict[str, Any],
    meta: dict[str, Any],
    *,
    keep: int,
) -> Path:
    """Write checkpoint `step` of `run_dir` atomically; keep the newest `keep` checkpoints.
    `weights` names each tensor once (a tied head's second name left out, as safetensors'
    `save_model` does, so `load_model` reads it back)."""
    folder = inside(run_dir, run_dir / CHECKPOINTS)
    folder.mkdir(parents=True, exist_ok=True)
    final = inside(run_dir, folder / checkpoint_name(step))
    tmp = folder / f"{PARTIAL_PREFIX}{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _write_files(tmp, step, weights, train_state, meta)
    except BaseException:  # a full disk or a signal mid-write: leave no partial folder behind
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if final.exists():  # a re-save of the same step (e.g. after resume at a checkpoint boundary)
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in checkpoint_dirs(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _write_files(
    tmp: Path,
    step: int,
    weights: dict[str, torch.Tensor],
    train_state: dict[str, Any],
    meta: dict[str, Any],
) -> None:
    """The checkpoint's files in `tmp`, with their sums, flushed to disk. Every file gets the
    mode a plain open() gives (safetensors' save_file would make the weights private, 0600)."""
    tmp.mkdir()
    # serialised in memory, written by plain writes: a full disk is then an OSError naming the
    # file, not safetensors' or torch's own report of a short write ("unexpected pos ...")
    tensors = {k: v.contiguous() for k, v in weights.items()}
    (tmp / WEIGHTS).write_bytes(safetensors.torch.save(tensors))
    state = io.BytesIO()
    torch.save(train_state, state)
    (tmp / TRAIN_STATE).write_bytes(state.getvalue())
    (tmp / CHECKPOINT_META).write_text(json.dumps({"format": FORMAT, "step": step, **meta}))
    sums = "".join(f"{_sha256(tmp / name)}  {name}\n" for name in FILES)
    (tmp / CHECKSUMS).write_text(sums)
    for name in (*FILES, CHECKSUMS):
        _fsync(tmp / name)


def remove_partial(run_dir: Path) -> None:
    """Delete the temporary folders of checkpoints whose writer died mid-write (killed, or
    out of disk): called when a run resumes, so that they never pile up."""
    folder = inside(run_dir, run_dir / CHECKPOINTS)
    if folder.is_dir():
        for tmp in folder.glob(f"{PARTIAL_PREFIX}*"):
            shutil.rmtree(tmp, ignore_errors=True)


def verify(ckpt: Path) -> str | None:
    """None when the checkpoint is whole, else what is wrong with it."""
    listed = _read_sums(ckpt / CHECKSUMS)
    if listed is None or sorted(listed) != sorted(FILES):
        return "is incomplete (no complete checksum list)"
    if not all((ckpt / name).is_file() for name in FILES):
        return "is incomplete"
    if any(_sha256(ckpt / name) != digest for name, digest in listed.items()):
        return "fails its checksum (truncated or corrupted)"
    return None


def newest(run_dir: Path) -> Path | None:
    """The newest checkpoint of `run_dir` that verifies, or None. Bad ones are reported and
    skipped."""
    for ckpt in reversed(checkpoint_dirs(run_dir)):
        problem = verify(ckpt)
        if problem is None:
            return ckpt
        warn(f"checkpoint {ckpt} {problem}; falling back to an earlier one")
    return None


def checked(ckpt: Path) -> Path:
    """`ckpt` itself, or a one-line error saying what is wrong with it."""
    problem = verify(ckpt)
    if problem is not None:
        raise DataError(f"checkpoint {ckpt} {problem}")
    return ckpt


def read_weights(model: nn.Module, ckpt: Path) -> None:
    """Load the checkpoint's weights into `model` (strict: every tensor must match)."""
    device = next(model.parameters()).device
    unfit = f"checkpoint {ckpt} does not fit the run's model config"
    try:
        missing, unexpected = safetensors.torch.load_model(
            model, ckpt / WEIGHTS, strict=False, device=str(device)
        )
    except SafetensorError as err:
        raise DataError(f"checkpoint {ckpt}: {WEIGHTS} is not a safetensors file ({err})") from None
    except RuntimeError as err:  # load_state_dict's shape report
        lines = str(err).splitlines()
        raise DataError(f"{unfit}: {lines[-1].strip()}") from None
    if missing or unexpected:
        raise DataError(f"{unfit}: {_unmatched(missing, unexpected)}")


def _unmatched(missing: list[str], unexpected: list[str]) -> str:
    """The first weight name each side lacks, and how many more."""
    parts = []
    for side, names in (("the file lacks", missing), ("the model has no", unexpected)):
        if names:
            more = f" (and {len(names) - 1} more)" if len(names) > 1 else ""
            parts.append(f"{side} {sorted(names)[0]!r}{more}")
    return "; ".join(parts)


def read_weight_file(ckpt: Path) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors by name, on the CPU."""
    try:
        return safetensors.torch.load_file(ckpt / WEIGHTS)
    except SafetensorError as err:
        raise DataError(f"checkpoint {ckpt}: {WEIGHTS} is not a safetensors file ({err})") from None


def read_meta(ckpt: Path) -> dict[str, Any]:
    """meta.json, its step checked against the folder's name (a resume trusts neither alone)."""
    meta = read_json_object(ckpt / CHECKPOINT_META) or {}
    if meta.get("format") != FORMAT:
        raise DataError(
            f"checkpoint {ckpt} has format {meta.get('format')!r}; this archaudit reads {FORMAT}"
        )
    check_step(ckpt, CHECKPOINT_META, meta.get("step"))
    return meta


def check_step(ckpt: Path, source: str, step: Any) -> int:
    """`step` as `source` in `ckpt` records it, refused unless it is the folder name's step:
    an edited or mixed-up checkpoint would resume a run that trains more or fewer steps than
    its result claims."""
    expected = checkpoint_step(ckpt)
    if type(step) is not int or step != expected:
        raise DataError(
            f"checkpoint {ckpt}: {source} says step {step!r} but the folder is step {expected}; "
            "a checkpoint whose records disagree is not resumed (delete it to resume from the "
            "one before)"
        )
    return step


def read_train_state(ckpt: Path) -> dict[str, Any]:
    """The optimizer and RNG state, unpickled with torch's allow-list of plain types only."""
    try:
        state = torch.load(ckpt / TRAIN_STATE, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        named = re.search(r"GLOBAL (\S+)", str(err))
        what = f"a pickled {named[1]}" if named else "objects that need full unpickling"
        raise DataError(
            f"checkpoint {ckpt}: {TRAIN_STATE} holds {what}; loading it could run arbitrary "
            "code, so it is refused"
        ) from None
    except (RuntimeError, EOFError, ValueError, OSError) as err:  # not a torch.save file
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DataError(
            f"checkpoint {ckpt}: {TRAIN_STATE} is not a training state ({first})"
        ) from None
    if not isinstance(state, dict):
        kind = type(state).__name__
        raise DataError(f"checkpoint {ckpt}: {TRAIN_STATE} holds a {kind}, not a dict")
    return state


def _read_sums(path: Path) -> dict[str, str] | None:
    """{file name: sha256} from a `sha256sum`-style list, or None when it is missing or torn."""
    try:
        lines = path.read_text().splitlines()
    except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
        return None
    pairs = [line.split("  ", 1) for line in lines]
    if not all(len(pair) == 2 for pair in pairs):
        return None
    return {name: digest for digest, name in pairs}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())
