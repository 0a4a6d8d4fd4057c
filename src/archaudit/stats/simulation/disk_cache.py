"""Simulated results cached on disk, keyed by everything that determines them (shared by the
calibrated levels and the design rates).

An entry is believed only when it proves itself: its key equals the one asked for, a SHA-256 of
its value matches, and the value passes the caller's range check (a level in [0, α], a rate in
[0, 1]). Anything else (a hand-edited value, a torn or foreign file, a FIFO) is recomputed and
rewritten, with one line saying so: a cache can cost time, never change a verdict."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from archaudit.files import atomic_write_text, cache_dir, read_regular_text
from archaudit.progress import warn

T = TypeVar("T")


def cached(
    kind: str,
    fields: dict[str, Any],
    name: str,
    compute: Callable[[], T],
    read: Callable[[Any], T],
    valid: Callable[[T], bool] = lambda _: True,
) -> T:
    """`compute()`, or the value stored under `name` in `<cache>/stats/<kind>-<hash>.json` when
    that entry proves itself (module docstring); `read` turns the stored JSON back into the
    value. A read-only or full cache only costs the simulation next time."""
    key = json.dumps(fields, sort_keys=True)
    path = cache_dir() / "stats" / f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    text = read_regular_text(path)
    if text is not None:
        value = _believed(text, key, name, read, valid)
        if value is not None:
            return value
        warn(f"{path}: a cache entry that does not check out (key, checksum or value); recomputed")
    elif path.exists() or path.is_symlink():
        warn(f"{path}: not a regular file; recomputed without caching")
        return compute()
    value = compute()
    _store(path, key, name, value)
    return value


def checksum(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _believed(
    text: str, key: str, name: str, read: Callable[[Any], T], valid: Callable[[T], bool]
) -> T | None:
    try:
        stored = json.loads(text)
        if stored.get("key") != key or stored.get("sha256") != checksum(stored[name]):
            return None
        value = read(stored[name])
        return value if valid(value) else None
    except (ValueError, KeyError, AttributeError, TypeError):
        return None


def _store(path: Path, key: str, name: str, value: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"key": key, "sha256": checksum(value), name: value}))
    except OSError:
        pass
