"""Two numerical tools the power and Dunnett computations need that scipy does not offer as is:
an unbounded bracket around scipy's `brentq`, and a χ² quadrature.

Distributions themselves (normal, Student t, noncentral t, χ², incomplete beta) come from
`scipy.stats` and `scipy.special`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq


def solve_increasing(
    f: Callable[[float], float],
    target: float,
    *,
    lo: float = 0.0,
    hi: float = 1.0,
    tol: float = 1e-9,
) -> float:
    """The x in [lo, ∞) where the increasing `f` reaches `target`: the bracket is doubled until
    it holds the crossing (scipy has no unbounded bracketing), then scipy's `brentq` solves it
    to `tol`·max(1, x).

    Returns `lo` when f(lo) already reaches the target.
    """
    if f(lo) >= target:
        return lo
    while f(hi) < target:
        lo, hi = hi, 2.0 * hi
        if hi > 1e300:
            raise ArithmeticError("target is never reached")
    return float(
        brentq(lambda x: f(x) - target, lo, hi, xtol=tol, rtol=max(tol, 4 * np.finfo(float).eps))
    )


@lru_cache(maxsize=256)
def chi_square_quadrature(df: int, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Nodes q and probability weights w with Σ w·g(q) ≈ E[g(V/df)], V ~ χ²_df.

    Gauss–Legendre in s = √(V/df), whose density ∝ s^(df−1)·exp(−df·s²/2) is smooth for whole
    df (unlike V's own density at df = 1) and, after the 1/√(2·df) rescaling, equally easy for
    every df. The weights are normalized numerically, so the constant never has to be computed.
    """
    width = 1.0 / math.sqrt(2.0 * df)
    lo, hi = max(0.0, 1.0 - 12.0 * width), 1.0 + 12.0 * width
    x, w = np.polynomial.legendre.leggauss(n)
    s = lo + (hi - lo) * (x + 1.0) / 2.0
    log_density = (df - 1) * np.log(s) - 0.5 * df * s**2
    weights = w * np.exp(log_density - log_density.max())
    return s**2, weights / weights.sum()
