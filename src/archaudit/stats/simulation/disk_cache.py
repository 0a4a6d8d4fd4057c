"""Simulated results cached on disk, keyed by everything that determines them (shared by the
calibrated levels and the design rates).

An entry is believed only when it proves itself (`files.load_entry`: its key, a SHA-256 of its
value, and the caller's range check: a level in [0, α], a rate in [0, 1]). Anything else (a
hand-edited value, a torn or foreign file, a FIFO) is recomputed with one line saying so: a
cache can cost time, never change a verdict."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, TypeVar

from archaudit.files import cache_dir, entry_or_compute

T = TypeVar("T")


def cached(
    kind: str, fields: dict[str, Any], compute: Callable[[], T], parse: Callable[[Any], T]
) -> T:
    """`compute()`, or the value stored in `<cache>/stats/<kind>-<hash>.json` for the key `fields`
    when that entry proves itself; `parse` turns the stored JSON back into the value and raises
    ValueError on one out of range. A read-only or full cache only costs the simulation again."""
    key = json.dumps(fields, sort_keys=True)
    path = cache_dir() / "stats" / f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    value = entry_or_compute(path, key, parse, compute)
    assert value is not None  # computed when not cached
    return value


def in_range(value: float, low: float, high: float) -> float:
    """`value` as a float, or ValueError when it is not a number (a string or a bool that
    `float` would take: "0.02", true) or outside [low, high] (NaN included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r:.40} is not a number")
    number = float(value)
    if not low <= number <= high:
        raise ValueError(f"{number} is outside [{low}, {high}]")
    return number
