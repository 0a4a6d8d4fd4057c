"""Must-show 1: Bonferroni, Holm and BH equal statsmodels' multipletests on unsorted inputs."""

import gc
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from archaudit.errors import ConfigError
from archaudit.stats.inference.corrections import adjust_pvalues, fwer_uncorrected, per_test_alpha

STATSMODELS_NAME = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh"}


@st.composite
def p_values(draw: st.DrawFn) -> np.ndarray:
    """Unsorted p-values, skewed towards small ones, with ties and the edges 0 and 1 mixed in."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = rng.uniform(size=draw(st.integers(1, 40))) ** rng.uniform(0.2, 5.0)
    ties = rng.integers(0, len(p), size=rng.integers(0, len(p) + 1))
    p[ties] = rng.choice([0.0, 1.0, 0.05, p[0]], size=len(ties))
    return p


@settings(max_examples=250, deadline=None)
@given(p=p_values(), method=st.sampled_from(sorted(STATSMODELS_NAME)))
def test_corrections_match_statsmodels(p, method):
    # statsmodels' Holm runs gc.collect() on every call (~40 ms); it changes nothing here.
    with mock.patch.object(gc, "collect", return_value=0):
        expected = multipletests(p, method=STATSMODELS_NAME[method])[1]
    np.testing.assert_allclose(adjust_pvalues(p, method), expected, rtol=1e-12, atol=0)


@settings(max_examples=100, deadline=None)
@given(p=p_values(), alpha=st.floats(min_value=0.001, max_value=0.2))
def test_holm_rejects_at_least_what_bonferroni_rejects(p, alpha):
    bonferroni = adjust_pvalues(p, "bonferroni") < alpha
    holm = adjust_pvalues(p, "holm") < alpha
    assert np.all(holm | ~bonferroni)


def test_none_leaves_p_values_alone_and_unknown_names_are_config_errors():
    np.testing.assert_array_equal(adjust_pvalues([0.3, 0.01], "none"), [0.3, 0.01])
    with pytest.raises(ConfigError, match="did you mean 'holm'"):
        adjust_pvalues([0.1], "holms")


def test_uncorrected_family_wise_error_rate():
    # The protocol's example: about 62% for m = 19 at α = 0.05.
    assert fwer_uncorrected(0.05, 19) == pytest.approx(1 - 0.95**19)
    assert round(fwer_uncorrected(0.05, 19), 2) == 0.62
    assert fwer_uncorrected(0.05, 0) == 0.0
    assert per_test_alpha(0.05, 19, "holm") == pytest.approx(0.05 / 19)
    assert per_test_alpha(0.05, 19, "none") == 0.05
