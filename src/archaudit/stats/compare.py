"""The core of every verdict: test each arm against the baseline, correct, classify.

`judge` (from a table), `adaptive_seeding` (from hypothetical extra seeds) and, on arrays,
`simulate_null` go through `family_test.statistics`, the corrections and `verdicts.classify`,
so they cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.stats.corrections import adjust_pvalues
from archaudit.stats.dunnett import dunnett_stepdown
from archaudit.stats.family_test import Z, standard_error, statistics
from archaudit.stats.noise import NoiseFloor
from archaudit.stats.significance import Welch, welch_test
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
    """Paper-mode z = Δ/σ, whatever the family's test."""
    p_z: float
    welch: Welch | None
    """Welch's t-test, present when the arm has >= 2 seeds, whatever the family's test."""
    test: str
    """The family's test: "pooled-t", "welch" or "z" (family_test)."""
    statistic: float
    """The family test's statistic (t or z)."""
    df: float
    """Its degrees of freedom (infinite for z)."""
    scale: float
    """What the test divides Δ by (its standard error; σ for z)."""
    p: float
    """Its two-sided p-value: the one the correction uses."""


def compare_arm(
    values: np.ndarray, baseline: np.ndarray, noise: NoiseFloor, sign: float, test: str
) -> ArmTest:
    """Test an arm's seed values against the baseline's; `sign` is −1 when lower is better."""
    n, n_base = len(values), len(baseline)
    mean = float(np.mean(values))
    delta = sign * (mean - float(np.mean(baseline)))
    z, _, p_z = statistics(Z, delta, n, n_base, noise.sigma, noise.dof)
    welch = None
    if n >= 2 and n_base >= 2 and (np.ptp(values) > 0 or np.ptp(baseline) > 0):
        raw = welch_test(values, baseline)
        welch = Welch(t=sign * raw.t, df=raw.df, p=raw.p)
    sd = float(np.std(values, ddof=1)) if n >= 2 else math.nan
    arm_var = sd**2 if n >= 2 else math.nan
    base_var = float(np.var(baseline, ddof=1))
    stat, df, p = statistics(test, delta, n, n_base, noise.sigma, noise.dof, arm_var, base_var)
    scale, _ = standard_error(test, n, n_base, noise.sigma, noise.dof, arm_var, base_var)
    return ArmTest(
        n=n,
        mean=mean,
        sd=sd,
        delta=delta,
        z=float(z),
        p_z=float(p_z),
        welch=welch,
        test=test,
        statistic=float(stat),
        df=float(df),
        scale=float(scale),
        p=float(p),
    )


def decide(
    tests: Sequence[ArmTest], noise: NoiseFloor, n_base: int, correction: str, alpha: float
) -> tuple[np.ndarray, list[str]]:
    """Correct the family's p-values together and classify each arm."""
    if correction == "dunnett":
        p_adjusted = dunnett_stepdown(
            [t.statistic for t in tests], [t.n for t in tests], n_base, noise.dof
        )
    else:
        p_adjusted = adjust_pvalues([test.p for test in tests], correction)
    verdicts = [
        classify(test.delta, noise.sigma, float(p), alpha)
        for test, p in zip(tests, p_adjusted, strict=True)
    ]
    return p_adjusted, verdicts
