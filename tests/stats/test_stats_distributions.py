"""Our special functions against scipy's (a dev dependency only)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from archaudit.stats.distributions import (
    betainc,
    chi_square_quadrature,
    normal_cdf,
    normal_quantile,
    normal_two_sided_p,
    normal_two_sided_quantile,
    student_t_cdf,
    student_t_two_sided_p,
    student_t_two_sided_quantile,
)

positive = st.floats(min_value=0.05, max_value=500.0)


@settings(max_examples=300, deadline=None)
# Subnormal x are left out: there scipy itself is off by ~15 % (mpmath agrees with us).
@given(a=positive, b=positive, x=st.just(0.0) | st.floats(min_value=1e-300, max_value=1.0))
def test_betainc_matches_scipy(a, b, x):
    assert betainc(a, b, x) == pytest.approx(special.betainc(a, b, x), rel=1e-9, abs=1e-300)


# |t| >= 1e-6: below that scipy rounds 2·sf(t) to 1.0 (the closed forms below cover it).
@settings(max_examples=300, deadline=None)
@given(
    t=st.floats(min_value=1e-6, max_value=60.0).map(lambda t: t * (-1) ** int(t * 1e6)),
    df=st.floats(min_value=1.0, max_value=1e4),
)
def test_student_t_matches_scipy(t, df):
    assert student_t_two_sided_p(t, df) == pytest.approx(2 * stats.t.sf(abs(t), df), rel=1e-9)
    assert student_t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), rel=1e-9, abs=1e-15)


@given(t=st.floats(min_value=0.0, max_value=1e6) | st.sampled_from([0.0, 1e-9, 1.0, 1e6]))
def test_student_t_closed_forms(t):
    # One and two degrees of freedom have elementary two-sided tails, written here without
    # cancellation: 1 − (2/π)·atan(t) and 1 − t/√(2 + t²).
    root = math.sqrt(2 + t * t)
    cauchy = 2 / math.pi * (math.pi / 2 - math.atan(t) if t < 1 else math.atan(1 / t))
    assert student_t_two_sided_p(t, 1.0) == pytest.approx(cauchy, rel=1e-9)
    assert student_t_two_sided_p(t, 2.0) == pytest.approx(2 / (root * (root + t)), rel=1e-9)


@pytest.mark.parametrize("p", [0.5, 0.05, 1e-3, 0.05 / 38, 1e-9])
@pytest.mark.parametrize("df", [1.0, 2.5, 4.0, 30.0])
def test_quantiles_invert_the_tails(p, df):
    assert normal_two_sided_quantile(p) == pytest.approx(stats.norm.isf(p / 2), rel=1e-10)
    assert student_t_two_sided_quantile(p, df) == pytest.approx(stats.t.isf(p / 2, df), rel=1e-9)


@given(z=st.floats(min_value=-30, max_value=30))
def test_normal_matches_scipy(z):
    assert normal_cdf(z) == pytest.approx(stats.norm.cdf(z), rel=1e-12, abs=1e-300)
    assert normal_two_sided_p(z) == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-12)
    assert float(normal_cdf(np.array([z]))[0]) == normal_cdf(z)


@pytest.mark.parametrize("q", [1e-6, 0.025, 0.3, 0.5, 0.9, 0.999])
def test_normal_quantile_matches_scipy(q):
    assert normal_quantile(q) == pytest.approx(stats.norm.ppf(q), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("df", [1, 2, 5, 40, 2000])
def test_chi_square_quadrature_integrates_smooth_functions(df):
    q, w = chi_square_quadrature(df)
    chi = stats.chi2(df, scale=1.0 / df)
    assert w.sum() == pytest.approx(1.0)
    assert np.sum(w * q) == pytest.approx(chi.mean(), rel=1e-9)
    assert np.sum(w * q**2) == pytest.approx(chi.moment(2), rel=1e-9)
    # E[Φ(1 − 2√q)] is what the power formula integrates.
    expected = stats.chi2(df).expect(lambda v: stats.norm.cdf(1 - 2 * math.sqrt(v / df)))
    assert np.sum(w * normal_cdf(1 - 2 * np.sqrt(q))) == pytest.approx(expected, abs=1e-7)
