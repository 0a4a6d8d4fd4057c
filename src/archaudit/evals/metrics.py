"""Accuracy with a Wilson score interval (never zero-width at 0% or 100%, PROTOCOL.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


@dataclass(frozen=True, kw_only=True)
class Accuracy:
    value: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict[str, float | int]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for `correct` successes out of `n` (Wilson 1927)."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def accuracy(flags: list[bool]) -> Accuracy:
    correct, n = sum(flags), len(flags)
    low, high = wilson(correct, n)
    return Accuracy(value=correct / n if n else float("nan"), low=low, high=high, n=n)
