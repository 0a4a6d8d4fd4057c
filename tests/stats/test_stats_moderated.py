"""Issue 41, item 6: the moderated Welch t (each side's variance shrunk toward the pooled σ²
with PRIOR_DF prior degrees of freedom, Smyth 2004) that every-arm-multi-seed families use."""

import numpy as np
import pytest

from archaudit.names import Test as Family
from archaudit.stats.inference.family_test import (
    PRIOR_DF,
    choose_test,
    moderated,
    moderated_welch,
    plain_welch,
    standard_error,
)


def test_a_moderated_variance_is_the_df_weighted_mean_of_its_own_and_the_pool():
    own, pooled, df = 9.0, 1.0, 1
    shrunk = moderated(own, df, np.sqrt(pooled))
    assert shrunk == pytest.approx((PRIOR_DF * pooled + df * own) / (PRIOR_DF + df))
    assert pooled < shrunk < own
    assert moderated(pooled, df, np.sqrt(pooled)) == pytest.approx(pooled)


def test_with_every_variance_at_the_pool_it_is_the_pooled_t_scale():
    n, n0, sigma, dof = 2, 3, 1.7, 4
    se, df = moderated_welch(n, n0, sigma, dof, sigma**2, sigma**2)
    assert se == pytest.approx(sigma * np.sqrt(1 / n + 1 / n0))
    assert df > n - 1  # the prior's degrees of freedom are added to the arm's own


def test_a_wide_arm_still_widens_its_own_test():
    n, n0, sigma, dof = 2, 3, 1.0, 4
    calm, _ = moderated_welch(n, n0, sigma, dof, sigma**2, sigma**2)
    wide, _ = moderated_welch(n, n0, sigma, dof, 36 * sigma**2, sigma**2)
    plain, _ = plain_welch(n, n0, 36 * sigma**2, sigma**2)
    assert calm < wide < plain


def test_only_families_of_multi_seed_arms_are_moderated():
    assert choose_test((2, 3)) == Family.WELCH and choose_test((1, 2)) == Family.ROBUST
    args = (np.array([2, 1]), 3, 1.0, 3, np.array([9.0, np.nan]), 1.0)
    robust, _ = standard_error(Family.ROBUST, *args)
    assert robust[0] == pytest.approx(plain_welch(2, 3, 9.0, 1.0)[0])
