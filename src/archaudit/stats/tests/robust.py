"""The robust test: the default when an arm has a single seed.

Plain Welch for every arm with >= 2 seeds. A single-seed arm cannot show its own spread, so it
is tested as if its seed σ were F times the pooled σ: t = Δ / (σ·√(F² + 1/n₀)) with σ's df, F
the single-seed bound (the larger of the panel's widest, 6, and the upper bound of the widest
multi-seed arm's ratio: stats/simulation/profile.py; ∞ with none). An arm that clears the
ordinary prediction-interval t (the pooled t) but not that bound is a *candidate*.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from archaudit.names import Test
from archaudit.stats.inference.distributions import chi_square_quadrature
from archaudit.stats.inference.family_test import plain_welch
from archaudit.stats.inference.significance import welch_df
from archaudit.stats.records.noise_panel import WIDEST_FACTOR
from archaudit.stats.records.verdicts import NOISE_SIGMAS
from archaudit.stats.tests.base import (
    PowerDesign,
    Spread,
    StatTest,
    TestFacts,
    arm_spread,
    expected_tails,
    frozen,
    noncentral_power,
    register_test,
    welch_critical,
)


@register_test
class Robust(StatTest):
    name = Test.ROBUST
    title = "Welch t (single seeds: t at the single-seed bound)"
    level_calibrated = True
    bounds_single_seeds = True
    covered_by_panel = True

    def standard_error(self, spread: Spread) -> tuple[np.ndarray, np.ndarray]:
        """Plain Welch's SE and df where n >= 2, σ·√(F² + 1/n₀) with σ's df where n = 1 (F the
        single-seed `bound`; ∞ makes such an arm's p 1: a candidate at most). Plain, not
        moderated: moderated, a mixed design's α′ fell so far that its single seeds lost power
        (1 + 2 seeds against 3: 37.5σ -> 178σ), and the sequential loop (also this test) erred
        0.060 with one arm 20× wide."""
        n, n_base = np.asarray(spread.n_arm), spread.n_base
        welch = plain_welch(np.maximum(n, 2), n_base, spread.arm_var, spread.base_var)
        sigma = np.asarray(spread.sigma, dtype=float)
        bounded = sigma * np.sqrt(np.square(spread.bound) + 1.0 / n_base)
        single = n < 2
        return (
            np.where(single, bounded, welch[0]),
            np.where(single, np.asarray(spread.dof, float), welch[1]),
        )

    def power(self, effect: float, design: PowerDesign) -> float:
        """One seed: the pooled-t rule with √(F² + 1/n_b) in the threshold while Δ still spreads
        as √(1 + 1/n_b)·σ. Several: plain Welch's, the expectation over the two χ² variance
        estimates of the two normal tails beyond max(t(ν̂)·SE, 2·s_b)."""
        if design.arm_seeds < 2:
            bound = math.sqrt(design.single_bound**2 + 1.0 / design.baseline_seeds)
            return noncentral_power(effect, design, bound)
        return expected_tails(effect, arm_spread(design), *welch_thresholds(design))

    def describe(self, facts: TestFacts) -> str:
        single = f"single seeds: t with σ's {facts.sigma_dof} df at the bound below"
        return f"{self.name} test (calibrated: {'; '.join(t for t in (facts.own_df, single) if t)})"

    def assumptions(self, facts: TestFacts) -> tuple[str, ...]:
        if not math.isfinite(facts.single_seed_bound):
            return (
                "single-seed arms are candidates only: no arm with >= 2 seeds shows how wide a "
                "seed's σ may be, so nothing bounds a single seed's spread; a candidate's second "
                "seed decides",
            )
        return (
            "single-seed arms are judged as if their seed σ were "
            f"{facts.single_seed_bound:.3g}× σ: the larger of the noise panel's widest "
            f"({WIDEST_FACTOR:g}×) and the "
            f"{facts.bound_confidence:.0%} upper bound of the widest multi-seed arm's σ ratio "
            "(stats/simulation/profile.py); one seed cannot show its own spread, so below "
            "that bound they are at most candidates. That bound is an ASSUMPTION, not an "
            "observation: a single seed wider than it makes its own test liberal, and the "
            f"design's rate above is measured with single seeds up to {WIDEST_FACTOR:g}× σ",
        )


@lru_cache(maxsize=1024)
def welch_thresholds(design: PowerDesign) -> tuple[np.ndarray, np.ndarray]:
    """Plain Welch's rejection threshold at each quadrature node, and the node's weight: all of
    its power but the effect, computed once per design (an MDE search asks for dozens)."""
    n_a, n_b = design.arm_seeds, design.baseline_seeds
    q_a, w_a = chi_square_quadrature(n_a - 1)
    q_b, w_b = chi_square_quadrature(n_b - 1)
    var_a, var_b = q_a[:, None] / n_a, q_b[None, :] / n_b
    se2 = var_a + var_b
    df = welch_df(var_a, var_b, n_a, n_b)
    t_critical = welch_critical(design.level, min(n_a, n_b) - 1, n_a + n_b - 2)
    threshold = np.maximum(t_critical(df) * np.sqrt(se2), NOISE_SIGMAS * np.sqrt(q_b[None, :]))
    return frozen(threshold, w_a[:, None] * w_b[None, :])
