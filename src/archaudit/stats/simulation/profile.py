"""The audit's own variance profile: how wide its multi-seed arms may be, from their seeds.

Each multi-seed arm's seed σ over the noise floor's has an upper confidence bound (its sample
variance is a χ² draw, so (s²/σ̂²)/ρ² ~ F(n − 1, ν)). The widest bound bounds a single seed's σ
(with the panel's widest, 6×), and the arms whose bound passes 6× form one more noise model,
`profile:F:K`, that the design's level is calibrated on (stats/simulation/calibrate.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import fdtri

from archaudit.stats.records.noise_panel import WIDEST_FACTOR, NoiseModel

BOUND_CONFIDENCE = 0.9
"""One-sided confidence of each multi-seed arm's upper bound on its seed-σ ratio."""
PROFILE_STEP = 2.0
PROFILE_TOP = WIDEST_FACTOR * PROFILE_STEP**5
"""Profile factors are rounded up to 6·2^k, at most 6·32 = 192 (Welch's size has levelled off
long before: its variance is then the arm's alone)."""
PROFILE_COUNTS = (1, 2, 3, 5, 8, 13, 21, 34, 55, 89)
"""Wide-arm counts are rounded up to these (more wide arms is the harder case)."""


@dataclass(frozen=True)
class Profile:
    """The audit's own variance profile, as one noise model: `arms` arms with seed σ × `factor`
    (0 arms: every bound is within the panel's widest, the panel covers it)."""

    factor: float
    arms: int

    @property
    def spec(self) -> str:
        return f"profile:{self.factor:.3g}:{self.arms}"

    def model(self) -> NoiseModel:
        return NoiseModel(self.spec, "hetero", factor=self.factor, wide_arms=self.arms)

    @classmethod
    def from_spec(cls, spec: str) -> Profile:
        """The profile a `spec` ("profile:F:K") names; "" is no profile."""
        if not spec:
            return NO_PROFILE
        _, factor, arms = spec.split(":")
        return cls(float(factor), int(arms))


NO_PROFILE = Profile(WIDEST_FACTOR, 0)


def ratio_bounds(
    arm_var: np.ndarray, sigma: np.ndarray | float, n_arm: np.ndarray, dof: int
) -> np.ndarray:
    """Upper `BOUND_CONFIDENCE` bounds of each arm's seed σ over the noise floor's, from its
    sample variance: (s²/σ̂²)/ρ² ~ F(n − 1, ν). NaN for single-seed arms; `arm_var` is (..., m),
    `n_arm` (m,) or (..., m) and `dof` ν a number or (..., 1)."""
    n = np.asarray(n_arm, dtype=float)
    quantile = fdtri(np.maximum(n - 1, 1), np.asarray(dof, dtype=float), 1.0 - BOUND_CONFIDENCE)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.sqrt(np.asarray(arm_var) / quantile) / sigma
    return np.where(n >= 2, bound, np.nan)


def single_seed_bound(bounds: np.ndarray) -> np.ndarray:
    """(B,) the factor a single seed's σ is bounded by: max(6, the widest arm's bound); ∞ when
    no arm has two seeds (nothing bounds it: candidates only)."""
    widest = np.max(np.where(np.isnan(bounds), -np.inf, bounds), axis=-1, initial=-np.inf)
    return np.where(np.isfinite(widest), np.maximum(widest, WIDEST_FACTOR), np.inf)


def profile_factors() -> list[float]:
    """The grid a profile's factor is rounded up to: 12, 24, ..., `PROFILE_TOP`."""
    return [WIDEST_FACTOR * PROFILE_STEP**k for k in range(1, 6)]


def profile_of(bounds: np.ndarray) -> Profile:
    """One audit's profile model from its arms' ratio bounds (1-D)."""
    factors, counts = profiles(bounds[None, :])
    return Profile(float(factors[0]), int(counts[0]))


def profiles(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B,) factor and (B,) wide-arm count of each audit's profile model from its (B, m) ratio
    bounds: the widest bound rounded up to 6·2^k (at most `PROFILE_TOP`) and the number of
    bounds above 6× rounded up to `PROFILE_COUNTS` (at most the multi-seed arms); 0 arms when
    every bound is within the panel's widest."""
    known = ~np.isnan(bounds)
    wide = known & (np.nan_to_num(bounds) > WIDEST_FACTOR)
    widest = np.max(np.where(wide, bounds, WIDEST_FACTOR), axis=1)
    steps = np.ceil(np.log2(widest / WIDEST_FACTOR) - 1e-9)
    factors = np.minimum(WIDEST_FACTOR * PROFILE_STEP ** np.maximum(steps, 1), PROFILE_TOP)
    grid = np.array(PROFILE_COUNTS)
    counts = grid[np.minimum(np.searchsorted(grid, wide.sum(axis=1)), len(grid) - 1)]
    counts = np.where(wide.any(axis=1), np.minimum(counts, known.sum(axis=1)), 0)
    return factors, counts


def profile_levels(
    bounds: np.ndarray, base: float, level_of: Callable[[Profile], float]
) -> np.ndarray:
    """(B,) each audit's own level from its (B, m) ratio bounds: `base` (the panel's), lowered
    to `level_of(profile)` for the profile its bounds show. Welch's size is not monotone in the
    variance ratio (worst near 10×, exact again far out), so a profile whose widest bound is F
    is covered by every grid factor from 12 up to F; and by one wide arm as well as its count
    (issue 53: a 2-seed bound is so loose that 8–13 calm arms pass 6× beside one truly wide
    arm, and many wide arms are a milder model than one). Used by the fixed designs' α′
    (calibrate.audit_levels) and the sequential loop's level (sequential.look_levels)."""
    factors, counts = profiles(bounds)
    levels = np.full(len(bounds), base)
    wide = counts > 0
    shown = set(zip(factors[wide].tolist(), counts[wide].tolist(), strict=True))
    for factor, count in sorted(shown):
        rows = (factors == factor) & (counts == count)
        below = [f for f in profile_factors() if f <= factor]
        level = min(level_of(Profile(f, k)) for f in below for k in sorted({1, count}))
        levels[rows] = np.minimum(levels[rows], level)
    return levels
