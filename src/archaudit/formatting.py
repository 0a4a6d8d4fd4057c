"""How numbers are written for people: the one formatter of the CLI's tables and the report.

A missing or non-finite value is written as an em dash, so that a blank cell never reads as 0.
Numbers keep three significant digits unless a caller asks for more (`VALUE_DIGITS` for a
metric's own value).
"""

from __future__ import annotations

import math

MISSING = "—"
DIGITS = 3
VALUE_DIGITS = 4
"""A metric's own value (a loss, an arm's mean) keeps 4: the arms of one audit often differ only
in the third digit, which their Δ then shows with 3 of its own."""
BETTER_UP = "positive = better"
"""The one sign convention of every table and figure: a difference from the baseline (Δ, an
effect or interaction in σ) is oriented so that an improvement is positive, and says so."""
BETTER_DOWN = "negative = better"
"""The label of the one quantity kept in its own units' direction: a relative loss change
(`loss_change`, negative = the loss fell), so its number matches the JSON field."""
SMALLEST_P = 1e-300
"""Below this a p-value has underflowed to 0 in floating point; it is written "< 1e-300"."""


def num(value: float | None, digits: int = DIGITS) -> str:
    """A number with `digits` significant digits, or the dash when it is missing."""
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{value:.{digits}g}"


def signed(value: float | None, digits: int = DIGITS) -> str:
    """A number with its sign always shown (a Δ), or the dash when it is missing."""
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{value:+.{digits}g}"


def pvalue(value: float | None) -> str:
    """A p-value. One that underflowed is "< 1e-300", never 0."""
    if value is None or not math.isfinite(value):
        return MISSING
    return f"< {SMALLEST_P:g}" if value < SMALLEST_P else num(value)


def counted(n: int, noun: str) -> str:
    """ "1 task", "3 tasks": a count with its noun in the number it takes."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def interval(bounds: tuple[float, float], digits: int = DIGITS) -> str:
    """An interval as "[low, high]"."""
    low, high = bounds
    return f"[{num(low, digits)}, {num(high, digits)}]"


NOT_ESTIMABLE = "not estimable"


def estimate(
    name: str, value: float, bounds: tuple[float, float] | None, digits: int = DIGITS
) -> str:
    """ "ρ = 0.8 [0.5, 1]", or "ρ not estimable" when the interval is not finite: a point value
    without its interval (the observed ranks' ρ of arms within noise) claims an order that is
    not there."""
    if bounds is None or not all(math.isfinite(b) for b in bounds):
        return f"{name} {NOT_ESTIMABLE}"
    return f"{name} = {num(value, digits)} {interval(bounds, digits)}"
