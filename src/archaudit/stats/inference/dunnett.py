"""Dunnett's many-to-one step-down on the shared-σ t statistics (any seeds per arm).

Every arm is compared with one baseline through tᵢ = (x̄ᵢ − x̄₀) / (σ̂·√(1/nᵢ + 1/n₀)), σ̂ the
pooled noise floor with ν degrees of freedom. Under the null the tᵢ share x̄₀ and σ̂, so they are
positively correlated (a multivariate t). Holm ignores that, Dunnett uses it. The tail of
max |tᵢ| is computed deterministically: given x̄₀ = u and σ̂ = s the arms are independent, so

    P(max |tᵢ| ≥ c) = E_{u,s}[ 1 − ∏ᵢ (1 − P(|x̄ᵢ − u| ≥ c·s·aᵢ)) ],  aᵢ = √(1/nᵢ + 1/n₀),

integrated by Gauss–Hermite quadrature over u and Gauss–Legendre over s (the noise floor's χ²).
`scipy.stats.dunnett` (randomised multivariate-t CDF, single step, σ from baseline + arms only)
agrees with the first step, as the tests check. The step-down (Dunnett & Tamhane 1991) tests the
largest |t| against the max over all arms, the next against the max over the others, and so on,
with monotone adjusted p-values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

from archaudit.stats.inference.distributions import chi_square_quadrature

_HERMITE_NODES = 48


def max_t_tail(c: float, n_arm: Sequence[int] | np.ndarray, n_base: int, dof: int) -> float:
    """P(max over the arms of |tᵢ| >= c) when no arm has an effect."""
    return float(max_t_tails(np.array([c]), n_arm, n_base, dof)[0])


def max_t_tails(
    c: np.ndarray, n_arm: Sequence[int] | np.ndarray, n_base: int, dof: int
) -> np.ndarray:
    """`max_t_tail` for every critical value in `c` at once (the simulations' first step)."""
    n = np.asarray(n_arm, dtype=float)
    z, wz = np.polynomial.hermite_e.hermegauss(_HERMITE_NODES)
    q, wq = chi_square_quadrature(dof)
    weights = (wz / wz.sum())[:, None] * wq[None, :]
    root_n = np.sqrt(n)[None, None, None, :]
    centre = (z / math.sqrt(n_base))[None, :, None, None]
    spread = np.sqrt(q)[None, None, :, None] * np.sqrt(1.0 / n + 1.0 / n_base)
    out = np.empty(len(c))
    step = max(1, 2**22 // (weights.size * len(n)))  # bounded memory per block
    for start in range(0, len(c), step):
        half = np.asarray(c[start : start + step])[:, None, None, None] * spread
        tails = ndtr(root_n * (centre - half)) + ndtr(-root_n * (centre + half))
        with np.errstate(divide="ignore"):  # a tail of 1 makes log(0) = −inf: the product is 0
            any_tail = -np.expm1(np.sum(np.log1p(-np.minimum(tails, 1.0)), axis=-1))
        out[start : start + step] = np.minimum(1.0, np.sum(weights * any_tail, axis=(1, 2)))
    return out


def critical_value(alpha: float, n_arm: Sequence[int], n_base: int, dof: int) -> float:
    """The c with P(max |tᵢ| >= c) = α: the first step's threshold."""

    def excess(c: float) -> float:
        return max_t_tail(c, n_arm, n_base, dof) - alpha

    hi = 4.0
    while excess(hi) > 0:
        hi *= 2.0
    return brentq(excess, 0.0, hi, xtol=1e-8)


def dunnett_stepdown(
    stat: Sequence[float] | np.ndarray, n_arm: Sequence[int] | np.ndarray, n_base: int, dof: int
) -> np.ndarray:
    """Step-down adjusted p-values, in the input order, for the shared-σ t statistics."""
    size = np.abs(np.asarray(stat, dtype=float))
    seeds = np.asarray(n_arm)
    order = np.argsort(-size, kind="stable")
    stepped = np.array(
        [max_t_tail(size[i], seeds[order[k:]], n_base, dof) for k, i in enumerate(order)]
    )
    adjusted = np.empty(len(size))
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(stepped))
    return adjusted
