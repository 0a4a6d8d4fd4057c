"""The two per-arm tests of docs/protocol.md: the paper-mode z-test and Welch's t-test."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr
from scipy.stats import ttest_ind


@dataclass(frozen=True, slots=True)
class Welch:
    """Welch's unequal-variance t-test of mean(a) − mean(b)."""

    t: float
    df: float
    """Welch–Satterthwaite degrees of freedom."""
    p: float
    """Two-sided p-value."""


def welch_df(se2_a: Any, se2_b: Any, n_a: Any, n_b: Any) -> Any:
    """Welch–Satterthwaite degrees of freedom from each group's squared standard error
    (variance / n) and size, elementwise: scipy computes it only inside `ttest_ind`, from the
    values, and the calibration and the power formula have variances, not values."""
    return (se2_a + se2_b) ** 2 / (se2_a**2 / np.subtract(n_a, 1) + se2_b**2 / np.subtract(n_b, 1))


def z_test(delta: float, sigma: float) -> tuple[float, float]:
    """Paper mode: z = Δ/σ against the noise floor, two-sided normal p = 2·(1 − Φ(|z|))."""
    z = delta / sigma
    return z, float(2.0 * ndtr(-abs(z)))


def welch_test(a: np.ndarray, b: np.ndarray) -> Welch:
    """Welch's t-test (scipy's `ttest_ind(equal_var=False)`); `a` and `b` need >= 2 values each
    and not both zero variance."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least two values per group")
    if np.var(a) == 0.0 and np.var(b) == 0.0:
        raise ValueError("Welch's t-test is undefined when both groups have zero variance")
    # scipy warns of "precision loss" when a group's seeds agree to many digits (a tiny demo run);
    # the result is what float64 gives, and the warning leaked into `run`'s output.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        result = ttest_ind(a, b, equal_var=False)
    return Welch(t=float(result.statistic), df=float(result.df), p=float(result.pvalue))
