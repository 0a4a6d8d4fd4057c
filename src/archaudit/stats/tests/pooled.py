"""The pooled t: one σ for every arm, only when equal variance is declared (`--equal-variance`).

t = Δ / (σ·√(1/n + 1/n₀)) with the noise floor's degrees of freedom; for a single-seed arm the
prediction-interval t, Δ / (σ·√(1 + 1/n₀)). Uncalibrated when arms' seed variances differ: the
verdicts carry the user's assumption.
"""

from __future__ import annotations

import numpy as np

from archaudit.names import Test
from archaudit.stats.tests.base import (
    PowerDesign,
    Spread,
    StatTest,
    TestFacts,
    arm_spread,
    noncentral_power,
    register_test,
)


@register_test
class PooledT(StatTest):
    name = Test.POOLED_T
    title = "pooled t"
    above_alpha_advice = (
        "drop --equal-variance / --reference normal: the default test is calibrated"
    )

    def standard_error(self, spread: Spread) -> tuple[np.ndarray, np.ndarray]:
        root = np.sqrt(1.0 / np.asarray(spread.n_arm, dtype=float) + 1.0 / spread.n_base)
        scale = np.asarray(spread.sigma, dtype=float) * root
        return scale, np.broadcast_to(np.asarray(spread.dof, dtype=float), scale.shape).copy()

    def dunnett_statistic(self, stat: np.ndarray, p: np.ndarray, dof: int) -> np.ndarray:
        """The pooled t itself: Dunnett's own statistic."""
        return np.asarray(stat, dtype=float)

    def power(self, effect: float, design: PowerDesign) -> float:
        """|Δ| >= max(t_ν·a, 2)·σ̂: a noncentral-t tail, exactly."""
        return noncentral_power(effect, design, arm_spread(design))

    def describe(self, facts: TestFacts) -> str:
        return f"{self.name} test (t with σ's {facts.sigma_dof} df)"

    def assumptions(self, facts: TestFacts) -> tuple[str, ...]:
        return ("ASSUMED by the user: every arm's seed σ equals the baseline's",)
