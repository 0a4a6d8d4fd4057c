"""Issues 41 and 53: the protected moderated Welch t that every-arm-multi-seed families use:
each side's variance moderated toward the other groups' pooled σ² (a leave-one-out prior) with
up to PRIOR_DF prior degrees of freedom, fewer when its own spread is improbable under that
prior; the baseline never below its own variance."""

import numpy as np
import pytest

from archaudit.names import Test as Family
from archaudit.stats.inference.family_test import (
    PRIOR_DF,
    choose_test,
    leave_one_out,
    moderated_parts,
    moderated_welch,
    plain_welch,
    prior_weight,
    protected,
)
from archaudit.stats.tests import Spread, statistical_test


def pooled_sigma(groups: list[tuple[float, int]]) -> tuple[float, int]:
    """(σ, ν) pooled over (variance, df) groups, as the noise floor pools them."""
    dof = sum(df for _, df in groups)
    return float(np.sqrt(sum(v * df for v, df in groups) / dof)), dof


def test_the_prior_is_the_other_groups_pool():
    sigma, dof = pooled_sigma([(400.0, 1), (1.0, 2), (1.0, 18)])
    prior, rest = leave_one_out(400.0, 1, sigma, dof)
    assert prior == pytest.approx(1.0) and rest == 20  # the wide arm does not set its own prior


def test_a_group_like_its_prior_gets_the_full_prior_weight():
    assert prior_weight(1.0, 1, 1.0, 20) == pytest.approx(PRIOR_DF)
    assert prior_weight(0.01, 1, 1.0, 20) == pytest.approx(PRIOR_DF)  # narrow: not improbable


def test_an_arm_whose_spread_is_improbable_under_the_prior_keeps_its_own_variance():
    sigma, dof = pooled_sigma([(400.0, 1), (1.0, 2), (1.0, 18)])
    var, weight = protected(400.0, 1, sigma, dof)
    assert weight < 0.01 * PRIOR_DF
    assert var == pytest.approx(400.0, rel=0.01)


def test_with_every_variance_at_the_pool_it_is_the_pooled_t_scale():
    n, n0, sigma, dof = 2, 3, 1.7, 4
    se, df = moderated_welch(n, n0, sigma, dof, sigma**2, sigma**2)
    assert se == pytest.approx(sigma * np.sqrt(1 / n + 1 / n0))
    assert df > n - 1  # the prior's degrees of freedom are added to the arm's own


def test_a_wide_arm_widens_its_own_test():
    sigma_calm, dof = pooled_sigma([(1.0, 1), (1.0, 1), (1.0, 2)])
    sigma_wide, _ = pooled_sigma([(36.0, 1), (1.0, 1), (1.0, 2)])
    calm, _ = moderated_welch(2, 3, sigma_calm, dof, 1.0, 1.0)
    wide, _ = moderated_welch(2, 3, sigma_wide, dof, 36.0, 1.0)
    se_arm, _, _, _ = moderated_parts(2, 3, sigma_wide, dof, 36.0, 1.0)
    assert calm < wide
    assert 1.0 / 2 < se_arm <= 36.0 / 2


def test_the_baseline_is_never_moderated_below_its_own_variance():
    sigma, dof = pooled_sigma([(36.0, 2), (1.0, 1), (1.0, 1), (1.0, 1)])
    _, se_base, _, _ = moderated_parts(2, 3, sigma, dof, 1.0, 36.0)
    assert se_base == pytest.approx(36.0 / 3)
    narrow, _ = pooled_sigma([(0.01, 2), (1.0, 1), (1.0, 1), (1.0, 1)])
    _, se_narrow, _, _ = moderated_parts(2, 3, narrow, dof, 1.0, 0.01)
    assert se_narrow > 0.01 / 3  # a narrow baseline still borrows from the arms


def test_only_families_of_multi_seed_arms_are_moderated():
    assert choose_test((2, 3)) == Family.WELCH and choose_test((1, 2)) == Family.ROBUST
    spread = Spread(np.array([2, 1]), 3, 1.0, 3, np.array([9.0, np.nan]), 1.0)
    robust, _ = statistical_test(Family.ROBUST).standard_error(spread)
    assert robust[0] == pytest.approx(plain_welch(2, 3, 9.0, 1.0)[0])
