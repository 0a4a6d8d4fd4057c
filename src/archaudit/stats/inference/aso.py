"""Almost stochastic order (ASO) of two score samples, as deep-significance defines it.

Dror, Shlomov & Reichart (ACL 2019), after del Barrio, Cuesta-Albertos & Matrán (2018); the
definitions follow `deepsig.aso` (Ulmer et al. 2022) so that the numbers agree:

- F⁻¹ and G⁻¹ are the empirical quantile functions of A and B, F⁻¹(t) = a₍⌈n·t⌉₎;
- the violation ratio ε_W2(A, B) = ∫_{F⁻¹ < G⁻¹} (F⁻¹ − G⁻¹)² dt / ∫ (F⁻¹ − G⁻¹)² dt, on the grid
  t = dt, 2·dt, ... < 1 (the numerator skips the first grid point, as deepsig does): the share of
  the squared Wasserstein-2 distance where A is worse than B (0 = A stochastically dominates B);
- ε_min = ε_W2 + Φ⁻¹(c)·sd(ε_W2*), clipped to [0, 1], where ε_W2* are bootstrap replicates (each
  sample resampled with replacement) and c = 1 − (1 − confidence)/m (Bonferroni over m
  comparisons; deepsig 1.2.8 uses confidence + (1 − confidence)/m, which is the same for m ≤ 2
  and less strict, not more, beyond). A is almost stochastically better than B when ε_min < τ;
  deepsig recommends τ = 0.2 (0.5 is the loosest meaningful threshold).

Higher scores are better. Needs scipy (the `stats` extra).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archaudit.stats.records.serialize import JsonResult

DEFAULT_DT = 0.005
ASO_THRESHOLD = 0.2
"""τ: ε_min below it calls A almost stochastically better than B (deepsig's recommendation)."""


@dataclass(frozen=True)
class AlmostStochasticOrder(JsonResult):
    """ε_W2 and ε_min in both directions; small ε_min(A, B) means A is better."""

    violation_ratio: float
    """ε_W2(A, B)."""
    eps_min: float
    """Upper confidence bound of ε_W2(A, B)."""
    eps_min_reverse: float
    """The same for B over A."""
    confidence: float
    """Per comparison, after the Bonferroni adjustment for m comparisons."""
    n_boot: int
    seed: int


def violation_ratio(a: np.ndarray, b: np.ndarray, dt: float = DEFAULT_DT) -> np.ndarray:
    """ε_W2(A, B) over the last axis (leading axes are replicates); 0.5 when F⁻¹ = G⁻¹."""
    t = np.arange(dt, 1, dt)
    f, g = _quantiles(np.asarray(a, dtype=float), t), _quantiles(np.asarray(b, dtype=float), t)
    gap = g - f
    total = np.sum(gap**2, axis=-1) * dt
    violated = np.sum(np.where(f < g, gap, 0.0)[..., 1:] ** 2, axis=-1) * dt
    safe = np.where(total > 0, total, 1.0)
    return np.where(total > 0, violated / safe, 0.5)


def almost_stochastic_order(
    a: np.ndarray,
    b: np.ndarray,
    *,
    confidence: float = 0.95,
    comparisons: int = 1,
    n_boot: int = 1000,
    dt: float = DEFAULT_DT,
    seed: int = 0,
) -> AlmostStochasticOrder:
    """ASO of scores `a` over scores `b` (higher = better), with a seeded bootstrap."""
    from scipy.stats import norm

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    a_boot = a[rng.integers(0, len(a), size=(n_boot, len(a)))]
    b_boot = b[rng.integers(0, len(b), size=(n_boot, len(b)))]
    level = 1.0 - (1.0 - confidence) / comparisons
    z = float(norm.ppf(level))

    def eps_min(x: np.ndarray, y: np.ndarray, x_boot: np.ndarray, y_boot: np.ndarray) -> float:
        spread = float(np.std(violation_ratio(x_boot, y_boot, dt)))
        return float(np.clip(violation_ratio(x, y, dt) + z * spread, 0.0, 1.0))

    return AlmostStochasticOrder(
        violation_ratio=float(violation_ratio(a, b, dt)),
        eps_min=eps_min(a, b, a_boot, b_boot),
        eps_min_reverse=eps_min(b, a, b_boot, a_boot),
        confidence=level,
        n_boot=n_boot,
        seed=seed,
    )


def _quantiles(scores: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The empirical quantile function F⁻¹(t) = x₍⌈n·t⌉₎ over the last axis."""
    n = scores.shape[-1]
    index = np.clip(np.ceil(n * t).astype(int) - 1, 0, n - 1)
    return np.sort(scores, axis=-1)[..., index]
