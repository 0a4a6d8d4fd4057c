"""Must-show 1: Welch, Spearman and Kendall equal scipy's; the z-test is PROTOCOL.md's."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from archaudit.stats.analyses.ranking import kendall_tau_b, rankdata, spearman
from archaudit.stats.inference.noise import pooled_sd
from archaudit.stats.inference.significance import welch_test, z_test

samples = st.lists(st.floats(min_value=-1e3, max_value=1e3), min_size=2, max_size=12)
ranked = st.lists(st.integers(min_value=0, max_value=6), min_size=2, max_size=25)


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")  # scipy, on near-ties
@settings(max_examples=300, deadline=None)
@given(a=samples, b=samples)
def test_welch_matches_scipy(a, b):
    a, b = np.array(a), np.array(b)
    assume(np.var(a) + np.var(b) > 1e-6)
    expected = stats.ttest_ind(a, b, equal_var=False)
    result = welch_test(a, b)
    assert result.t == pytest.approx(expected.statistic, rel=1e-9)
    assert result.p == pytest.approx(expected.pvalue, rel=1e-8, abs=1e-300)
    assert result.df == pytest.approx(expected.df, rel=1e-9)


def test_welch_needs_two_values_per_group():
    with pytest.raises(ValueError, match="two values"):
        welch_test(np.array([1.0]), np.array([1.0, 2.0]))


@given(delta=st.floats(min_value=-50, max_value=50), sigma=st.floats(min_value=1e-3, max_value=10))
def test_z_test_is_two_sided_normal(delta, sigma):
    z, p = z_test(delta, sigma)
    assert z == delta / sigma
    assert p == pytest.approx(2 * stats.norm.sf(abs(delta / sigma)), rel=1e-10, abs=1e-300)


@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=2, max_size=25))
def test_spearman_and_kendall_match_scipy_with_ties(pairs):
    x, y = (np.array(side, dtype=float) for side in zip(*pairs, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        rho, tau = stats.spearmanr(x, y).statistic, stats.kendalltau(x, y).statistic
    for ours, theirs in ((spearman(x, y), rho), (kendall_tau_b(x, y), tau)):
        if math.isnan(theirs):
            assert math.isnan(ours)
        else:
            assert ours == pytest.approx(theirs, abs=1e-12)


@given(values=ranked)
def test_rankdata_matches_scipy(values):
    np.testing.assert_allclose(rankdata(np.array(values)), stats.rankdata(values))


def test_pooled_sd_is_the_protocol_formula():
    groups = [np.array([1.0, 2.0, 4.0]), np.array([3.0, 3.5]), np.array([0.0, 1.0, 1.0, 5.0])]
    numerator = sum((len(g) - 1) * np.var(g, ddof=1) for g in groups)
    denominator = sum(len(g) - 1 for g in groups)
    sigma, dof = pooled_sd(groups)
    assert dof == denominator == 6
    assert sigma == pytest.approx(math.sqrt(numerator / denominator))
    assert pooled_sd(groups[:1])[0] == pytest.approx(np.std(groups[0], ddof=1))
