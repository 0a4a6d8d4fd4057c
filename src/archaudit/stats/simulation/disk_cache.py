"""Simulated results cached on disk, keyed by everything that determines them (shared by the
calibrated levels and the design rates)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, TypeVar

from archaudit.files import atomic_write_text, cache_dir

T = TypeVar("T")


def cached(
    kind: str, fields: dict[str, Any], name: str, compute: Callable[[], T], read: Callable[[Any], T]
) -> T:
    """`compute()`, or the value stored under `name` in `<cache>/stats/<kind>-<hash>.json` when
    its key (the JSON of `fields`) matches; `read` turns the stored JSON back into the value. A
    torn or foreign file is recomputed; a read-only cache only costs the simulation next time."""
    key = json.dumps(fields, sort_keys=True)
    path = cache_dir() / "stats" / f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    try:
        stored = json.loads(path.read_text())
        if stored.get("key") == key:
            return read(stored[name])
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        pass
    value = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"key": key, name: value}))
    except OSError:
        pass
    return value
