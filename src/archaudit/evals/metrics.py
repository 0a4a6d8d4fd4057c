"""Accuracy with a Wilson score interval (never zero-width at 0% or 100%, docs/protocol.md), and
the mean of a per-item score in [0, 1] (MC2) with a normal interval."""

from __future__ import annotations

import math
from dataclasses import dataclass

from archaudit.stats.inference.paired import wilson_interval


@dataclass(frozen=True, kw_only=True)
class Accuracy:
    value: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict[str, float | int]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}


def wilson(correct: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval (`archaudit.stats`); (0, 1) for a task with no items."""
    return (0.0, 1.0) if n == 0 else wilson_interval(correct, n)


def accuracy(flags: list[bool]) -> Accuracy:
    correct, n = sum(flags), len(flags)
    low, high = wilson(correct, n)
    return Accuracy(value=correct / n if n else float("nan"), low=low, high=high, n=n)


def mean_interval(values: list[float]) -> Accuracy:
    """The mean of per-item scores with a normal 95% interval, clipped to [0, 1]."""
    n = len(values)
    if n == 0:
        return Accuracy(value=float("nan"), low=0.0, high=1.0, n=0)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.25
    half = 1.96 * math.sqrt(var / n)
    return Accuracy(value=mean, low=max(mean - half, 0.0), high=min(mean + half, 1.0), n=n)
