"""Where diagnostics go: `<run dir>/diagnostics/` for an archaudit run or checkpoint, so the
report finds them beside the run's other results; `diagnostics/<model name>/` under the current
directory for a Hugging Face or GGUF model; or any folder the user names.

The folder is never a link (a `diagnostics/` link would carry the writes out of the run), and a
file in it is replaced only when it is an earlier result of the same diagnostic (a JSON object
with the same keys) or figure (a PNG matplotlib drew)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from archaudit.errors import DataError
from archaudit.evals.models import ADAPTERS
from archaudit.files import atomic_write_text, check_output_file, read_json, refuse_link
from archaudit.rundir import SPEC, run_dir_of
from archaudit.stats.records.serialize import to_jsonable

FOLDER = "diagnostics"


def diagnostics_dir(model: str | Path, out: str | Path | None = None) -> Path:
    folder = _folder(model, out)
    refuse_link(folder, "--out")
    return folder


def _folder(model: str | Path, out: str | Path | None) -> Path:
    if out is not None:
        return Path(out)
    kind, _, rest = str(model).partition(":")
    path = Path(rest) if rest and kind in ADAPTERS else Path(model)
    run = run_dir_of(path)
    if (run / SPEC).is_file():
        return run / FOLDER
    return Path(FOLDER) / path.stem


def write_result(folder: Path, name: str, result: Any) -> Path:
    """`<folder>/<name>.json` from a result with `to_dict()` (or a plain dict)."""
    data = to_jsonable(result)
    path = folder / f"{name}.json"
    check_output_file(path, "--out", lambda p: _same_keys(p, data))
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=1, allow_nan=False) + "\n")
    return path


def _same_keys(path: Path, data: Any) -> bool:
    try:
        old = read_json(path)
    except (OSError, DataError):
        return False
    return isinstance(old, dict) and isinstance(data, dict) and old.keys() == data.keys()
