"""Accuracy with a Wilson score interval (never zero-width at 0% or 100%, docs/protocol.md)."""

from __future__ import annotations

from dataclasses import dataclass

from archaudit.stats.paired import wilson_interval


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
