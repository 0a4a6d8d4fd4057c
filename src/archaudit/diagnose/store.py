"""Where diagnostics go: `<run dir>/diagnostics/` for an archaudit run or checkpoint, so the
report finds them beside the run's other results; `diagnostics/<model name>/` under the current
directory for a Hugging Face or GGUF model; or any folder the user names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from archaudit.evals.models import ADAPTERS
from archaudit.files import atomic_write_text
from archaudit.rundir import SPEC, run_dir_of
from archaudit.stats.serialize import to_jsonable

FOLDER = "diagnostics"


def diagnostics_dir(model: str | Path, out: str | Path | None = None) -> Path:
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
    folder.mkdir(parents=True, exist_ok=True)
    data = to_jsonable(result)
    path = folder / f"{name}.json"
    atomic_write_text(path, json.dumps(data, indent=1, allow_nan=False) + "\n")
    return path
