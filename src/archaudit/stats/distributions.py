"""The few distribution functions the verdicts need, in pure Python + numpy (no scipy).

Normal tails use `math.erfc`; Student-t tails use the regularized incomplete beta function,
evaluated by its continued fraction (modified Lentz, as in Numerical Recipes §6.4). Inverses are
bisections, which are slow but exact to the last few bits and impossible to get subtly wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

_SQRT2 = math.sqrt(2.0)
_TINY = 1e-300
_EPS = 1e-15
_MAX_TERMS = 100_000
_erfc_array = np.frompyfunc(math.erfc, 1, 1)


def normal_cdf(x: float | np.ndarray) -> float | np.ndarray:
    """Φ(x), the standard normal CDF (elementwise on arrays)."""
    if isinstance(x, np.ndarray):
        return 0.5 * _erfc_array(-x / _SQRT2).astype(float)
    return 0.5 * math.erfc(-x / _SQRT2)


def normal_two_sided_p(z: float) -> float:
    """P(|Z| >= |z|) = 2·(1 − Φ(|z|)), computed without cancellation."""
    return math.erfc(abs(z) / _SQRT2)


def normal_two_sided_quantile(p: float) -> float:
    """The z > 0 with P(|Z| >= z) = p (e.g. 1.96 for p = 0.05)."""
    _check_probability(p)
    return solve_increasing(lambda z: -normal_two_sided_p(z), -p, tol=1e-14)


def normal_quantile(q: float) -> float:
    """Φ⁻¹(q), the standard normal quantile."""
    if q == 0.5:
        return 0.0
    z = normal_two_sided_quantile(2.0 * min(q, 1.0 - q))
    return z if q > 0.5 else -z


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    return _betainc(a, b, x, 1.0 - x)


def _betainc(a: float, b: float, x: float, y: float) -> float:
    # y = 1 − x is passed separately so that callers can keep its precision when x ≈ 1.
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    )
    # The continued fraction converges fast only on this side of the mean; use symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, y) / b


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    def clamp(value: float) -> float:
        return value if abs(value) > _TINY else _TINY

    c, d = 1.0, 1.0 / clamp(1.0 - (a + b) * x / (a + 1.0))
    fraction = d
    for m in range(1, _MAX_TERMS):
        even = m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m))
        d = 1.0 / clamp(1.0 + even * d)
        c = clamp(1.0 + even / c)
        fraction *= d * c
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))
        d = 1.0 / clamp(1.0 + odd * d)
        c = clamp(1.0 + odd / c)
        fraction *= d * c
        if abs(d * c - 1.0) < _EPS:
            return fraction
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def student_t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with `df` (real, > 0) degrees of freedom."""
    t2 = t * t
    return _betainc(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2))


def student_t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * student_t_two_sided_p(t, df)
    return 1.0 - tail if t > 0 else tail


def student_t_two_sided_quantile(p: float, df: float) -> float:
    """The t > 0 with P(|T| >= t) = p for `df` degrees of freedom."""
    _check_probability(p)
    return solve_increasing(lambda t: -student_t_two_sided_p(t, df), -p, tol=1e-12)


def solve_increasing(
    f: Callable[[float], float],
    target: float,
    *,
    lo: float = 0.0,
    hi: float = 1.0,
    tol: float = 1e-9,
) -> float:
    """The x in [lo, ∞) where the increasing `f` reaches `target`, by bracketing and bisection.

    Returns `lo` when f(lo) already reaches the target. Stops when the bracket is narrower than
    `tol`·max(1, x).
    """
    if f(lo) >= target:
        return lo
    while f(hi) < target:
        lo, hi = hi, 2.0 * hi
        if hi > 1e300:
            raise ArithmeticError("target is never reached")
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return hi


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


def _check_probability(p: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must be in (0, 1), got {p}")
