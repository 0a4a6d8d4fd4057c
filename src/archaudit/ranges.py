"""`Range`: where a numeric option's values may lie. A field of an option class names its
range in its metadata (`field(metadata={"range": Range(1)})`), and the command line checks every
value of the flag against it where the flag is parsed (`cli.base.options.in_range`): a value out of
range is one line naming the flag, exit 2."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Range:
    """Where a numeric option's values may lie: finite, and within [low, high] (an open end
    excludes its bound: `low_open` makes `--target-tokens 0` an error, not a division by 0)."""

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False

    def bounds(self) -> tuple[float, float, bool, bool]:
        """The arguments of `in_range` that check this range."""
        return self.low, self.high, self.low_open, self.high_open

    def holds(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def __str__(self) -> str:
        if self.low == -math.inf and self.high == math.inf:
            return "a finite number"
        if self.high == math.inf:
            return f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        if self.low == -math.inf:
            return f"a finite number {'<' if self.high_open else '<='} {self.high:g}"
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"a number in {left}{self.low:g}, {self.high:g}{right}"


REPLICATES = Range(1, 100_000)
"""Bootstrap replicates: each holds a row per arm or item, and 10⁹ filled 15 GiB."""
SEED = Range(0)
"""A seed of numpy's generator (numpy seeds are >= 0)."""
COUNT = Range(1)
"""A count of things (arms, seeds, audits, items): at least one."""
