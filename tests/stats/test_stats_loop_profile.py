"""Issue 41: the sequential loop's level takes the audit's own variance profile into account,
as a fixed design's α′ does (stats/simulation/sequential.py `look_levels`)."""

import numpy as np
import pytest

from archaudit.stats.simulation.profile import NO_PROFILE, Profile, profile_factors, profile_of
from archaudit.stats.simulation.sequential import (
    SequentialRule,
    arm_tests,
    look_levels,
    loop_level,
    spent_level,
)

RULE = SequentialRule(max_seeds=3, calibrated=True)


def audits(spread: float) -> tuple[np.ndarray, np.ndarray]:
    """Two audits of one 2-seed arm against 3 baseline seeds: a plain one, and one whose arm's
    two seeds lie `spread` apart (its ratio bound far above the panel's 6×)."""
    baseline = np.array([[0.0, 1.0, -1.0], [0.0, 1.0, -1.0]])
    arms = np.array([[[0.5, -0.5]], [[0.0, spread]]])
    return baseline, arms


def test_an_audit_with_a_wide_arm_gets_its_profiles_lower_level():
    tests = arm_tests(*audits(spread=100.0))
    levels = look_levels(RULE, tests)
    wide = profile_of(tests.ratio[1])
    assert profile_of(tests.ratio[0]).arms == NO_PROFILE.arms and wide.arms == 1
    assert levels[0] == loop_level(1, RULE)
    assert levels[1] == spent_level(RULE, 1, wide)
    assert levels[1] == min(levels[0], *(loop_level(1, RULE, p) for p in covering(wide)))
    assert levels[1] < levels[0]


def covering(profile):
    """The grid profiles a profile's level is the smallest of (profile.profile_levels)."""
    return [Profile(f, profile.arms) for f in profile_factors() if f <= profile.factor]


def test_an_uncalibrated_rule_spends_alpha_whatever_the_profile():
    plain = SequentialRule(max_seeds=3)
    tests = arm_tests(*audits(spread=100.0))
    assert look_levels(plain, tests) == pytest.approx([plain.alpha, plain.alpha])
