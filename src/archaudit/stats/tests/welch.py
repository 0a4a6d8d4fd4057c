"""The protected moderated Welch t: the default test when every arm has >= 2 seeds.

Each side's seed variance is moderated toward the *other* groups' pooled σ² (a leave-one-out
prior, so a wide arm does not set its own) with up to `PRIOR_DF` prior degrees of freedom, fewer
when the side's own spread is improbable under that prior; the baseline is never moderated below
its own variance; then Welch's SE and df on the moderated variances (the arithmetic:
`family_test.moderated_welch`). Its level α′ is calibrated by simulation over the noise panel.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from archaudit.names import Test
from archaudit.stats.inference.distributions import chi_square_quadrature
from archaudit.stats.inference.family_test import moderated_parts, moderated_welch
from archaudit.stats.records.verdicts import NOISE_SIGMAS
from archaudit.stats.tests.base import (
    QUADRATURE,
    PowerDesign,
    Spread,
    StatTest,
    TestFacts,
    Values,
    arm_spread,
    expected_tails,
    frozen,
    register_test,
    welch_critical,
)


@register_test
class ModeratedWelch(StatTest):
    name = Test.WELCH
    title = "moderated Welch t"
    level_calibrated = True
    moderated = True
    covered_by_panel = True

    def standard_error(self, spread: Spread) -> tuple[np.ndarray, np.ndarray]:
        return moderated_welch(*_moderated_inputs(spread))

    def prior_weights(self, spread: Spread) -> tuple[float, float]:
        if spread.arm_var is None or spread.base_var is None:
            return super().prior_weights(spread)
        _, _, d_arm, d_base = moderated_parts(*_moderated_inputs(spread))
        return float(d_arm), float(d_base)

    def power(self, effect: float, design: PowerDesign) -> float:
        """The expectation over the arm's, the baseline's and the rest of σ's χ² sums of
        squares, by Gauss–Legendre quadrature (`QUADRATURE` nodes each), of the two normal tails
        beyond max(t(ν̂)·SE, 2σ̂)."""
        return expected_tails(effect, arm_spread(design), *moderated_thresholds(design))

    def describe(self, facts: TestFacts) -> str:
        return f"{self.title} test (calibrated: {facts.moderation}; {facts.own_df})"


def _moderated_inputs(spread: Spread) -> tuple[Values, ...]:
    if spread.arm_var is None or spread.base_var is None:
        raise ValueError("Welch's test needs the arm's and the baseline's seed variances")
    return spread.n_arm, spread.n_base, spread.sigma, spread.dof, spread.arm_var, spread.base_var


@lru_cache(maxsize=1024)
def moderated_thresholds(design: PowerDesign) -> tuple[np.ndarray, np.ndarray]:
    """The moderated Welch rule's threshold at each quadrature node, and the node's weight: all
    of its power but the effect, computed once per design (an MDE search asks for dozens)."""
    n_a, n_b, dof = design.arm_seeds, design.baseline_seeds, design.dof
    rest = dof - (n_a - 1) - (n_b - 1)
    q_a, w_a = chi_square_quadrature(n_a - 1, QUADRATURE)
    q_b, w_b = chi_square_quadrature(n_b - 1, QUADRATURE)
    q_r, w_r = chi_square_quadrature(rest, QUADRATURE) if rest else (np.ones(1), np.ones(1))
    ss_a, ss_b = (n_a - 1) * q_a[:, None, None], (n_b - 1) * q_b[None, :, None]
    sigma2 = (ss_a + ss_b + rest * q_r[None, None, :]) / dof
    se, df = moderated_welch(n_a, n_b, np.sqrt(sigma2), dof, ss_a / (n_a - 1), ss_b / (n_b - 1))
    t_critical = welch_critical(design.level, min(n_a, n_b) - 1, 2 * dof)
    threshold = np.maximum(t_critical(df) * se, NOISE_SIGMAS * np.sqrt(sigma2))
    return frozen(threshold, w_a[:, None, None] * w_b[None, :, None] * w_r[None, None, :])
