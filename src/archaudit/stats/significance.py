"""The two per-arm tests of docs/protocol.md: the paper-mode z-test and Welch's t-test."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, stdtr


@dataclass(frozen=True, slots=True)
class Welch:
    """Welch's unequal-variance t-test of mean(a) − mean(b)."""

    t: float
    df: float
    """Welch–Satterthwaite degrees of freedom."""
    p: float
    """Two-sided p-value."""


def z_test(delta: float, sigma: float) -> tuple[float, float]:
    """Paper mode: z = Δ/σ against the noise floor, two-sided normal p = 2·(1 − Φ(|z|))."""
    z = delta / sigma
    return z, float(2.0 * ndtr(-abs(z)))


def welch_test(a: np.ndarray, b: np.ndarray) -> Welch:
    """Welch's t-test; `a` and `b` need >= 2 values each and not both zero variance."""
    n_a, n_b = len(a), len(b)
    if n_a < 2 or n_b < 2:
        raise ValueError("Welch's t-test needs at least two values per group")
    var_a = float(np.var(a, ddof=1)) / n_a
    var_b = float(np.var(b, ddof=1)) / n_b
    se2 = var_a + var_b
    if se2 == 0.0:
        raise ValueError("Welch's t-test is undefined when both groups have zero variance")
    t = (float(np.mean(a)) - float(np.mean(b))) / math.sqrt(se2)
    df = se2**2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    return Welch(t=t, df=df, p=float(2.0 * stdtr(df, -abs(t))))
