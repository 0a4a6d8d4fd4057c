"""The core of every verdict: test each arm against the baseline, correct, classify.

`judge` (from a table), `adaptive_seeding` (from hypothetical extra seeds) and, on arrays,
`simulate_null` go through the family's registered test (`stats/tests/`), the
corrections and `verdicts.classify`, so they cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.names import Test
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.inference.corrections import adjust_pvalues
from archaudit.stats.inference.dunnett import dunnett_stepdown
from archaudit.stats.inference.noise import NoiseFloor
from archaudit.stats.inference.significance import Welch, welch_test
from archaudit.stats.records.noise_panel import WIDEST_FACTOR
from archaudit.stats.records.verdicts import Verdict, candidate, classify
from archaudit.stats.tests import Spread, statistical_test


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
    """The family's test: a registered name (stats/tests/: "welch", "robust", ...)."""
    statistic: float
    """The family test's statistic (t or z)."""
    df: float
    """Its degrees of freedom (infinite for z)."""
    scale: float
    """What the test divides Δ by: its standard error, or σ for z."""
    p: float
    """Its two-sided p-value: the one the correction uses."""
    p_pooled: float
    """The pooled-σ t-test's p (the prediction-interval t for one seed): with the `robust`
    test, a single-seed arm that is significant by it alone is a candidate."""
    prior_df: tuple[float, float] = (math.nan, math.nan)
    """(arm's, baseline's) d₀ of the moderated Welch t (NaN for the other tests)."""


def compare_arm(
    values: np.ndarray,
    baseline: np.ndarray,
    noise: NoiseFloor,
    sign: float,
    test: str,
    bound: float = WIDEST_FACTOR,
) -> ArmTest:
    """Test an arm's seed values against the baseline's. `sign` is −1 when lower is better;
    `bound` is the single-seed bound of the robust test (stats/simulation/profile.py)."""
    n, n_base = len(values), len(baseline)
    mean = float(np.mean(values))
    delta = sign * (mean - float(np.mean(baseline)))
    pooled = Spread(n, n_base, noise.sigma, noise.dof)
    z, _, p_z = statistical_test(Test.Z).statistics(delta, pooled)
    welch = None
    if n >= 2 and n_base >= 2 and (np.ptp(values) > 0 or np.ptp(baseline) > 0):
        raw = welch_test(values, baseline)
        welch = Welch(t=sign * raw.t, df=raw.df, p=raw.p)
    sd = float(np.std(values, ddof=1)) if n >= 2 else math.nan
    arm_var = sd**2 if n >= 2 else math.nan
    base_var = float(np.var(baseline, ddof=1))
    spread = Spread(n, n_base, noise.sigma, noise.dof, arm_var, base_var, bound)
    family_test = statistical_test(test)
    scale, df = family_test.standard_error(spread)
    stat, df, p = family_test.scaled(delta, scale, df)
    _, _, p_pooled = statistical_test(Test.POOLED_T).statistics(delta, pooled)
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
        p_pooled=float(p_pooled),
        prior_df=family_test.prior_weights(spread),
    )


def decide(
    tests: Sequence[ArmTest],
    noise: NoiseFloor,
    n_base: int,
    options: JudgeOptions,
    level: float | None = None,
) -> tuple[np.ndarray, list[Verdict]]:
    """Correct the family's p-values together (`options.correction`) and classify each arm at
    the calibrated `level` α′ (None: `options.alpha`).

    With a test that bounds single seeds (`robust`), a single-seed arm that only the pooled t
    finds (its own spread assumed equal to σ) is a candidate.
    """
    correction = options.correction
    alpha = options.alpha if level is None else level
    p_adjusted = _corrected(tests, [t.p for t in tests], noise, n_base, correction)
    verdicts = [
        classify(test.delta, noise.sigma, float(p), alpha)
        for test, p in zip(tests, p_adjusted, strict=True)
    ]
    if any(statistical_test(t.test).bounds_single_seeds and t.n < 2 for t in tests):
        plain = [t.p_pooled if t.n < 2 else t.p for t in tests]
        p_plain = _corrected(tests, plain, noise, n_base, correction)
        verdicts = [
            candidate(verdict) if test.n < 2 and plain_p < alpha else verdict
            for test, verdict, plain_p in zip(tests, verdicts, p_plain, strict=True)
        ]
    return p_adjusted, verdicts


def _corrected(
    tests: Sequence[ArmTest], p: Sequence[float], noise: NoiseFloor, n_base: int, correction: str
) -> np.ndarray:
    if correction != "dunnett":
        return adjust_pvalues(p, correction)
    statistic = statistical_test(tests[0].test if tests else Test.POOLED_T).dunnett_statistic(
        np.array([t.statistic for t in tests]),
        np.asarray(p, dtype=float),
        noise.dof,
    )
    return dunnett_stepdown(statistic, [t.n for t in tests], n_base, noise.dof)
