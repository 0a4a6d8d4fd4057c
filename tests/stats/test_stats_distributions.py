"""The χ² quadrature and the bracketing solver behind the power formula and Dunnett's tail."""

import math

import numpy as np
import pytest
from scipy import stats

from archaudit.stats.inference.distributions import chi_square_quadrature, solve_increasing


@pytest.mark.parametrize("df", [1, 2, 5, 40, 2000])
def test_chi_square_quadrature_integrates_smooth_functions(df):
    q, w = chi_square_quadrature(df)
    chi = stats.chi2(df, scale=1.0 / df)
    assert w.sum() == pytest.approx(1.0)
    assert np.sum(w * q) == pytest.approx(chi.mean(), rel=1e-9)
    assert np.sum(w * q**2) == pytest.approx(chi.moment(2), rel=1e-9)
    # E[Φ(1 − 2√q)] is what the Welch power formula integrates.
    expected = stats.chi2(df).expect(lambda v: stats.norm.cdf(1 - 2 * math.sqrt(v / df)))
    assert np.sum(w * stats.norm.cdf(1 - 2 * np.sqrt(q))) == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("target", [0.0, 0.3, 7.5, 1e6])
def test_solve_increasing_finds_the_crossing(target):
    x = solve_increasing(lambda v: v**3, target, tol=1e-12)
    assert x**3 == pytest.approx(target, rel=1e-9, abs=1e-12)
