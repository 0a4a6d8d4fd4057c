"""The depth-sensitivity test (stats/analyses/depth_sensitivity.py): ΔD, its verdicts, its
error rate on null depth stresses, and where it sees what the depth test cannot."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from archaudit.stats.analyses.depth_sensitivity import (
    degradation,
    judge_depth_sensitivity,
    sensitivity_strata,
    sensitivity_test,
)
from archaudit.stats.analyses.stability import (
    MORE_FRAGILE,
    MORE_ROBUST,
    NOT_ESTIMABLE,
    WITHIN_NOISE,
    SweepRun,
    judge_depth,
)

L0 = 5.5
LR = 0.03
LAYERS = (2, 4, 8)


def runs(arm: str, means, seeds: int = 6, noise: float = 0.0, rng=None, broken=()) -> list:
    """`seeds` runs of `arm` at each of `LAYERS` (one rate), final loss `means[i]` + noise; a
    layer count in `broken` diverged (counts as L₀)."""
    out = []
    for layers, mean in zip(LAYERS, means, strict=True):
        for seed in range(seeds):
            value = mean + (rng.normal(0, noise) if rng is not None else 0.0)
            bad = layers in broken
            out.append(
                SweepRun(arm, LR, seed, L0, None if bad else value, not bad, 5 if bad else None,
                         layers=layers, grad_level=0.0)
            )  # fmt: skip
    return out


def test_degradation_is_the_deeper_mean_minus_the_sweeps_depth():
    assert degradation(runs("a", [1.2, 1.6, 2.8])) == pytest.approx((1.6 + 2.8) / 2 - 1.2)
    # a diverged run counts as its initial loss
    assert degradation(runs("a", [1.2, 1.6, 2.8], broken=(8,))) == pytest.approx(
        (1.6 + L0) / 2 - 1.2
    )
    strata = sensitivity_strata(runs("a", [1.2, 1.6, 2.8]), runs("b", [2.0, 1.9, 2.0]))
    assert [s.weight for s in strata] == [-1.0, 0.5, 0.5]
    delta, _ = sensitivity_test(strata, permutations=99)
    assert delta == pytest.approx(1.0 - (-0.05))


def test_a_degrading_arm_is_more_fragile_and_an_improving_one_more_robust():
    rng = np.random.default_rng(1)
    base = runs("baseline", [2.0, 1.9, 2.0], noise=0.1, rng=rng)
    worse = runs("post_ln", [1.2, 1.7, 2.8], noise=0.1, rng=rng)
    better = runs("deepnorm", [2.2, 1.6, 1.4], noise=0.1, rng=rng)
    found = {v.arm: v for v in judge_depth_sensitivity(
        {"baseline": base, "post_ln": worse, "deepnorm": better}, "baseline", permutations=999
    )}  # fmt: skip
    assert found["post_ln"].verdict == MORE_FRAGILE and found["post_ln"].delta > 0
    assert found["deepnorm"].verdict == MORE_ROBUST and found["deepnorm"].delta < 0
    assert found["post_ln"].p_adjusted >= found["post_ln"].p  # Holm over the two arms
    assert found["post_ln"].error_rate == "FWER"


def test_it_sees_the_trend_the_depth_test_cancels():
    """Better than the baseline at the sweep's depth and 4×, worse at 8×: the depth test
    (ranks *at* the deeper models) has nothing; the trend is the claim (Xiong et al.)."""
    rng = np.random.default_rng(2)
    data = {
        "baseline": runs("baseline", [2.0, 1.9, 2.0], seeds=8, noise=0.15, rng=rng),
        "post_ln": runs("post_ln", [1.2, 1.5, 2.5], seeds=8, noise=0.15, rng=rng),
    }
    (depth,) = judge_depth(data, "baseline", permutations=999)
    (trend,) = judge_depth_sensitivity(data, "baseline", permutations=999)
    assert depth.verdict == WITHIN_NOISE
    assert trend.verdict == MORE_FRAGILE


def test_a_constant_shift_is_no_trend():
    rng = np.random.default_rng(3)
    data = {
        "baseline": runs("baseline", [2.0, 2.1, 2.3], seeds=8, noise=0.1, rng=rng),
        "shifted": runs("shifted", [1.5, 1.6, 1.8], seeds=8, noise=0.1, rng=rng),
    }
    (found,) = judge_depth_sensitivity(data, "baseline", permutations=999)
    assert found.verdict == WITHIN_NOISE and abs(found.delta) < 0.2


def test_not_estimable_without_two_runs_per_stratum_or_a_deeper_model():
    base = runs("baseline", [2.0, 1.9, 2.0], seeds=1)
    (one,) = judge_depth_sensitivity(
        {"baseline": base, "a": runs("a", [1.0, 2.0, 3.0], seeds=1)}, "baseline"
    )
    assert one.verdict == NOT_ESTIMABLE and one.p is None
    shallow = [r for r in runs("baseline", [2.0, 1.9, 2.0]) if r.layers == 2]
    assert sensitivity_strata(shallow, shallow) is None  # no deeper model


def test_error_rate_on_null_depth_stresses_is_at_most_alpha():
    """Arm and baseline drawn alike (a trend shared by both, seed noise as the pilot's at
    8 layers, one arm broke sometimes): the share declared at α 0.05 stays ≤ α (a one-sided
    binomial check at 1%)."""
    rng = np.random.default_rng(2026)
    trials, declared = 300, 0
    for _ in range(trials):
        data = {
            arm: runs(arm, [1.9, 2.0, 2.2], seeds=4, noise=0.4, rng=rng)
            for arm in ("baseline", "a")
        }
        (found,) = judge_depth_sensitivity(data, "baseline", permutations=199)
        declared += found.verdict != WITHIN_NOISE
    assert stats.binom.sf(declared - 1, trials, 0.05) > 0.01, declared
