"""One arm's prediction at an untrained target scale: the record `stats.predict` makes and the
verdict record (`ArmVerdict.at_target`) carries."""

from __future__ import annotations

import math
from dataclasses import dataclass

from archaudit.stats.records.serialize import JsonResult


@dataclass(frozen=True)
class TargetPrediction(JsonResult):
    """One arm at the target scale; NaN where `estimable` is false."""

    arm: str
    delta: float
    """Predicted Δ at the target (metric units, baseline − arm: positive = better, as `stats`)."""
    interval: tuple[float, float]
    """Prediction interval of the true Δ at the target, at the prediction's confidence."""
    p_sign_holds: float
    """Probability that the sign at the target is the sign of Δ̂ at the largest trained scale."""
    rank: int
    """Predicted rank among the arms (1 = the largest Δ, the lowest loss)."""
    rank_interval: tuple[float, float]
    delta_largest: float
    """Δ̂ at the largest trained scale."""
    estimable: bool
    reason: str = ""
    """Why not estimable ("" when it is)."""
    method: str = ""
    """"slope_rule" (the Δ̂ at the largest trained scale, or the end of its interval nearest it
    where the interval, which follows the arm's own slope, rules it out), "stacked" (the stack
    of curves, where it beats the single-scale prediction in the backtest); "" when not
    estimable. A report says it in words."""
    confidence: float = math.nan
    """The interval's level."""
    coverage: float = math.nan
    """The share of the ladder's held-out observations its method's intervals held in the
    backtest (the measured coverage to print beside the interval)."""
