"""`DesignSize`: a balanced design's size, the flags of `stats power` and `simulate-null`
without a source. Apart from `design` (its tests import scipy) so that the command line builds
its flags without importing the tests."""

from __future__ import annotations

from dataclasses import dataclass, field

from archaudit.ranges import COUNT, Range


@dataclass(frozen=True, kw_only=True)
class DesignSize:
    """A balanced design's size, for `stats power` and `simulate-null` without a source (one flag
    per field)."""

    n_arms: int = field(default=19, metadata={"range": COUNT})
    """m, the number of arms in the family (a count)."""
    seeds: int = field(default=3, metadata={"range": COUNT})
    """Seeds per arm."""
    baseline_seeds: int | None = field(default=None, metadata={"range": Range(2)})
    """Default: as many as --seeds, at least 3."""
