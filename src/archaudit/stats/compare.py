"""The core of every verdict: test each arm against the baseline, correct, classify.

`judge` (from a table), `simulate_null` (from random draws) and `adaptive_seeding` (from
hypothetical extra seeds) all go through these two functions, so they cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.stats.corrections import adjust_pvalues
from archaudit.stats.significance import Welch, welch_test, z_test
from archaudit.stats.verdicts import classify


@dataclass(frozen=True, slots=True)
class ArmTest:
    """One arm against the baseline. Δ, z and t are signed so that positive = better."""

    n: int
    mean: float
    sd: float
    """Seed standard deviation (NaN with one seed)."""
    delta: float
    z: float
    p_z: float
    welch: Welch | None
    """Welch's t-test, present when the arm has >= 2 seeds."""

    @property
    def test(self) -> str:
        """Which test drives the verdict: Welch when the arm has >= 2 seeds, else paper-mode z."""
        return "welch" if self.welch is not None else "z"

    @property
    def p(self) -> float:
        return self.welch.p if self.welch is not None else self.p_z


def compare_arm(values: np.ndarray, baseline: np.ndarray, sigma: float, sign: float) -> ArmTest:
    """Test an arm's seed values against the baseline's; `sign` is −1 when lower is better."""
    mean = float(np.mean(values))
    delta = sign * (mean - float(np.mean(baseline)))
    z, p_z = z_test(delta, sigma)
    welch = None
    if len(values) >= 2:
        raw = welch_test(values, baseline)
        welch = Welch(t=sign * raw.t, df=raw.df, p=raw.p)
    sd = float(np.std(values, ddof=1)) if len(values) >= 2 else math.nan
    return ArmTest(n=len(values), mean=mean, sd=sd, delta=delta, z=z, p_z=p_z, welch=welch)


def decide(
    tests: Sequence[ArmTest], sigma: float, correction: str, alpha: float
) -> tuple[np.ndarray, list[str]]:
    """Correct the family's p-values together and classify each arm."""
    p_adjusted = adjust_pvalues([test.p for test in tests], correction)
    verdicts = [
        classify(test.delta, sigma, float(p), alpha)
        for test, p in zip(tests, p_adjusted, strict=True)
    ]
    return p_adjusted, verdicts
