"""Atomic file writes: write a temporary file beside the target, then rename it into place.

Readers (a resumed run, a second worker, the index) see the old file or the new one, never half
of one, also when the writer is killed mid-write. Used for every file archaudit writes that
another process may read.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from archaudit.errors import DataError


def cache_dir() -> Path:
    """Where archaudit keeps what it can rebuild (token caches, design error rates)."""
    return Path(os.environ.get("ARCHAUDIT_CACHE", Path.home() / ".cache" / "archaudit"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # what open() would give; read once, at import


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call `write(tmp)` on a fresh temporary path in `path`'s folder, then rename it to `path`.
    The file gets the mode a plain `open()` would give it, not mkstemp's private 0600, so that
    the other members of a shared results folder can read it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text))


def read_json(path: Path) -> Any:
    """The JSON value in `path`, None when there is no such file; a file that is not UTF-8
    JSON (torn, edited, binary) is a one-line DataError naming it."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise DataError(f"{path} is not valid JSON ({str(err).splitlines()[0]})") from None
    except IsADirectoryError:
        raise DataError(f"{path} is a folder, where archaudit expects a JSON file") from None


def read_json_object(path: Path) -> dict[str, Any] | None:
    """`read_json` for files that hold one JSON object (records, specs, metadata)."""
    value = read_json(path)
    if value is not None and not isinstance(value, dict):
        raise DataError(f"{path} holds {type(value).__name__} where a JSON object belongs")
    return value
