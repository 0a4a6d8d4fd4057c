"""Simulated results cached on disk, keyed by everything that determines them (shared by the
calibrated levels and the design rates).

An entry is believed only when it proves itself (`files.load_entry`: its key, a SHA-256 of its
value, and the caller's range check: a level in [0, α], a rate in [0, 1]). Anything else (a
hand-edited value, a torn or foreign file, a FIFO) is recomputed with one line saying so: a
cache can cost time, never change a verdict.

The package ships the entries that `plan` needs for `archaudit init`'s starters and the demo
(`SHIPPED`, written by `python -m archaudit.devtools.shipped_cache --write`): they are read first,
under the same names and with the same checks, and never written, so a first `plan` on a fresh
machine simulates nothing it ships. A version bump changes the keys, so a stale shipped entry is
simply never found (and `tests/stats/test_stats_shipped_cache.py` fails until it is
regenerated). `ARCHAUDIT_NO_SHIPPED_CACHE=1` ignores it (the generator does, to see what a plan
computes)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from archaudit.files import BadEntry, cache_dir, entry_or_compute, load_entry
from archaudit.progress import warn

T = TypeVar("T")

SHIPPED = Path(__file__).with_name("shipped")
"""The package's read-only entries (`entry_name`'s names), read before the user's cache."""
NO_SHIPPED = "ARCHAUDIT_NO_SHIPPED_CACHE"


def entry_name(kind: str, key: str) -> str:
    """The file name of the entry for `key` (its JSON text): `<kind>-<hash>.json`."""
    return f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def shipped(name: str, key: str, parse: Callable[[Any], T]) -> T | None:
    """The package's entry `name` when it is there and proves itself (None otherwise, or when
    `ARCHAUDIT_NO_SHIPPED_CACHE` is set); a damaged one says so once and is passed over."""
    if os.environ.get(NO_SHIPPED):
        return None
    try:
        return load_entry(SHIPPED / name, key, parse)
    except BadEntry as bad:
        warn(f"{bad}; the package's copy passed over")
        return None


def cached(
    kind: str, fields: dict[str, Any], compute: Callable[[], T], parse: Callable[[Any], T]
) -> T:
    """`compute()`, or the value stored for the key `fields` in the package's `SHIPPED` entries
    or in `<cache>/stats/<kind>-<hash>.json`, whichever first proves itself; `parse` turns the
    stored JSON back into the value and raises ValueError on one out of range. A read-only or
    full cache only costs the simulation again."""
    key = json.dumps(fields, sort_keys=True)
    name = entry_name(kind, key)
    value = shipped(name, key, parse)
    if value is not None:
        return value
    value = entry_or_compute(cache_dir() / "stats" / name, key, parse, compute)
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
