"""Power of the verdict rule, the minimum detectable effect (MDE) and the seeds a claim needs.

Effects are in units of the true seed standard deviation σ. The formula models exactly what
`judge` does to an arm with `arm_seeds` seeds against a baseline with `baseline_seeds` seeds,
when seeds are normal with a common σ: an arm is declared an improver/regressor when

- single seed (paper mode): |Δ| >= max(c, 2)·σ̂, with c the two-sided normal quantile at the
  per-test level and σ̂ the noise floor (χ² with `sigma_dof` degrees of freedom);
- several seeds (Welch): |Δ| >= max(t(ν̂)·SE, 2·s_b), with SE² = s_a²/n_a + s_b²/n_b, ν̂ the
  Welch–Satterthwaite degrees of freedom and s_b the baseline's own seed SD;

where Δ ~ N(effect, 1/n_a + 1/n_b) is independent of the variance estimates. Conditional on
them the rejection probability is two normal tails; the expectation over the χ² variance
estimates is taken by Gauss–Legendre quadrature. The per-test level is α/m for every correction
(exact for Bonferroni, a lower bound on power for Holm and BH) and α without one. The single-seed
case is exact; the Welch case is exact when σ̂ comes from the baseline alone (no anchors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from archaudit.errors import ConfigError
from archaudit.stats.corrections import check_correction, per_test_alpha
from archaudit.stats.distributions import (
    chi_square_quadrature,
    normal_cdf,
    normal_two_sided_quantile,
    solve_increasing,
    student_t_two_sided_quantile,
)
from archaudit.stats.verdicts import NOISE_SIGMAS

_CRITICAL_GRID = 48


@dataclass(frozen=True, slots=True)
class Design:
    """How one arm is compared with the baseline inside a family of `arms` comparisons."""

    arm_seeds: int
    baseline_seeds: int
    arms: int = 1
    """m, the number of arms in the corrected family."""
    alpha: float = 0.05
    correction: str = "holm"
    sigma_dof: int | None = None
    """Degrees of freedom of the noise floor; None means baseline_seeds − 1 (no anchors)."""

    def __post_init__(self) -> None:
        check_correction(self.correction)
        if self.arm_seeds < 1 or self.baseline_seeds < 2 or self.arms < 1:
            raise ConfigError(
                f"a design needs >= 1 seed per arm, >= 2 baseline seeds and >= 1 arm; got "
                f"{self.arm_seeds}, {self.baseline_seeds} and {self.arms}"
            )
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError(f"alpha must be between 0 and 1, got {self.alpha}")

    @classmethod
    def balanced(cls, seeds: int, baseline_seeds: int | None = None, **options: Any) -> Design:
        """`seeds` per arm; the baseline runs `baseline_seeds`, by default as many (at least 2)."""
        return cls(arm_seeds=seeds, baseline_seeds=baseline_seeds or max(seeds, 2), **options)

    @property
    def level(self) -> float:
        return per_test_alpha(self.alpha, self.arms, self.correction)


def power(effect: float, design: Design) -> float:
    """P(the arm is declared an improver or regressor) when its true effect is `effect`·σ."""
    n_a, n_b = design.arm_seeds, design.baseline_seeds
    spread = math.sqrt(1.0 / n_a + 1.0 / n_b)
    if n_a == 1:
        q, weights = chi_square_quadrature(design.sigma_dof or n_b - 1)
        critical = max(normal_two_sided_quantile(design.level), NOISE_SIGMAS)
        threshold = critical * np.sqrt(q)
    else:
        q_a, w_a = chi_square_quadrature(n_a - 1)
        q_b, w_b = chi_square_quadrature(n_b - 1)
        var_a, var_b = q_a[:, None] / n_a, q_b[None, :] / n_b
        se2 = var_a + var_b
        df = se2**2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
        t_critical = _welch_critical(design.level, min(n_a, n_b) - 1, n_a + n_b - 2)
        threshold = np.maximum(t_critical(df) * np.sqrt(se2), NOISE_SIGMAS * np.sqrt(q_b[None, :]))
        weights = w_a[:, None] * w_b[None, :]
    tails = normal_cdf((effect - threshold) / spread) + normal_cdf((-effect - threshold) / spread)
    return float(np.sum(weights * tails))


def minimum_detectable_effect(design: Design, target: float = 0.8) -> float:
    """The smallest true effect (in σ) declared significant with probability `target`."""
    return solve_increasing(lambda effect: power(effect, design), target, tol=1e-5)


def seeds_needed(
    effect: float,
    *,
    baseline_seeds: int | None = None,
    arms: int = 1,
    alpha: float = 0.05,
    correction: str = "holm",
    target: float = 0.8,
    max_seeds: int = 1000,
) -> int | None:
    """The fewest seeds per arm that detect `effect`·σ with probability `target`.

    `baseline_seeds=None` means the baseline runs as many seeds as each arm (at least 2).
    None when even `max_seeds` is not enough: effects under 2σ are within noise by rule, so
    they are never declared, however many seeds run.
    """

    def reaches(k: int) -> bool:
        design = Design.balanced(k, baseline_seeds, arms=arms, alpha=alpha, correction=correction)
        return power(effect, design) >= target

    # Paper mode (k = 1) is a different test, so power need not grow from k = 1 to 2; from
    # k = 2 on it does, and bisection is safe.
    if baseline_seeds is not None and reaches(1):
        return 1
    if not reaches(max_seeds):
        return None
    lo, hi = 1, max_seeds
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reaches(mid) else (mid, hi)
    return hi


@lru_cache(maxsize=64)
def _welch_critical(level: float, df_min: int, df_max: int):
    """t(ν) for ν in [df_min, df_max], interpolated in log–log space between exact quantiles."""
    grid = np.geomspace(df_min, df_max, _CRITICAL_GRID) if df_max > df_min else np.array([df_min])
    log_t = np.log([student_t_two_sided_quantile(level, float(df)) for df in grid])
    log_df = np.log(grid)
    return lambda df: np.exp(np.interp(np.log(df), log_df, log_t))
