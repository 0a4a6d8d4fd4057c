"""The paper's z (`--reference normal`): z = Δ/σ against the normal distribution.

It treats σ as exact, so it is uncalibrated when σ comes from a few seeds: a labelled
reproduction mode, whose verdicts are shown beside the paper's own rule.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps
from scipy.special import ndtr

from archaudit.names import Test
from archaudit.stats.records.verdicts import NOISE_SIGMAS
from archaudit.stats.tests.base import (
    PowerDesign,
    Spread,
    StatTest,
    TestFacts,
    arm_spread,
    noncentral_tails,
    register_test,
)


@register_test
class PaperZ(StatTest):
    name = Test.Z
    title = "z"
    symbol = "z"
    calibrated = False
    reproduces_paper = True
    above_alpha_advice = (
        "drop --equal-variance / --reference normal: the default test is calibrated"
    )

    def standard_error(self, spread: Spread) -> tuple[np.ndarray, np.ndarray]:
        ones = np.ones_like(np.asarray(spread.n_arm, dtype=float))
        scale = np.asarray(spread.sigma, dtype=float) * ones
        return scale, np.full_like(scale, np.inf)

    def p_value(self, stat: np.ndarray, df: np.ndarray) -> np.ndarray:
        """Two-sided p against the normal distribution (σ treated as exact)."""
        return 2.0 * ndtr(-np.abs(stat))

    def power(self, effect: float, design: PowerDesign) -> float:
        """|Δ| >= max(c, 2)·σ̂, c the two-sided normal quantile: a noncentral-t tail, exactly."""
        threshold = max(sps.norm.isf(design.level / 2), NOISE_SIGMAS) / arm_spread(design)
        return noncentral_tails(effect, threshold, design)

    def describe(self, facts: TestFacts) -> str:
        return "z test, UNCALIBRATED paper mode (σ treated as exact)"

    def caveat(self, sigma_dof: int) -> str | None:
        return (
            "UNCALIBRATED paper mode (--reference normal): the z-test treats σ as exact, though "
            f"it comes from {sigma_dof} degrees of freedom"
        )
