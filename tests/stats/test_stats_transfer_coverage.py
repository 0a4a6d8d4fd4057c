"""Coverage of the transfer intervals: do they hold the Spearman ρ and Kendall τ of the true
effects as often as they claim?

Defect: the bootstrap percentile interval of ρ̂ sat below the truth: noise only ever shuffles a
ranking, so for twelve arms 1σ apart it held the true ρ = 1 of a perfect transfer in 0% of
audits, for a nominal 95%.
"""

import math

import numpy as np
import pytest

from archaudit.stats import cross_scale_transfer
from archaudit.stats.analyses.ranking import kendall_tau_b, spearman
from archaudit.stats.records.table import Row, Table

SEEDS = 3
AUDITS = 25
EXACT = 1e-9
"""Bounds and truth are the same ratio computed two ways: equal up to rounding."""


def audit(small: np.ndarray, large: np.ndarray, rng: np.random.Generator) -> Table:
    """A baseline and arms of 3 seeds each at two scales; effects in σ = 1 (higher is better)."""
    rows = []
    for scale, effects in (("d6", small), ("d12", large)):
        for i, effect in enumerate((0.0, *effects)):
            arm = "baseline" if i == 0 else f"arm{i}"
            for seed, noise in enumerate(rng.normal(size=SEEDS)):
                rows.append(Row(arm, scale, seed, "acc", effect + noise))
    return Table(tuple(rows))


CLOSE = np.arange(1.0, 13.0)
FAR = np.arange(1.0, 7.0) * 6.0
SWAPPED = [1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10]
"""Neighbours trade places: a partial transfer."""
TRANSFERS = {
    # case: (true effects small, large; least share of audits with an interval)
    "perfect, arms 1σ apart": (CLOSE, 1.5 * CLOSE, 0.9),
    "partial, arms 1σ apart": (CLOSE, CLOSE[SWAPPED], 0.8),
    "perfect, arms 6σ apart": (FAR, FAR, 1.0),
    "partial, arms 6σ apart": (FAR, FAR[SWAPPED[:6]], 1.0),
}


@pytest.mark.parametrize("case", TRANSFERS)
def test_intervals_hold_the_true_rank_correlation_at_their_level(case):
    small, large, least = TRANSFERS[case]
    truth = spearman(small, large), kendall_tau_b(small, large)
    rng = np.random.default_rng(7)
    covered, estimable = np.zeros(2), 0
    for _ in range(AUDITS):
        result = cross_scale_transfer(audit(small, large, rng), "acc")
        intervals = result.spearman_interval, result.kendall_interval
        if math.isnan(intervals[0][0]):
            assert "not estimable" in result.notes[0]
            continue
        estimable += 1
        covered += [
            low - EXACT <= t <= high + EXACT
            for (low, high), t in zip(intervals, truth, strict=True)
        ]
    assert estimable >= least * AUDITS
    assert min(covered) / estimable >= 0.93


def test_arms_far_apart_get_a_narrow_interval():
    rng = np.random.default_rng(1)
    result = cross_scale_transfer(audit(FAR, FAR[SWAPPED[:6]], rng), "acc")
    low, high = result.spearman_interval
    assert low - EXACT <= spearman(FAR, FAR[SWAPPED[:6]]) <= high + EXACT
    assert high - low < 0.2
    assert all(arm.rank_small_range[0] == arm.rank_small_range[1] for arm in result.arms)


def test_arms_within_noise_give_no_ranking():
    rng = np.random.default_rng(2)
    result = cross_scale_transfer(audit(np.zeros(6), np.zeros(6), rng), "acc")
    assert all(np.isnan(result.spearman_interval)) and all(np.isnan(result.kendall_interval))
    assert "not estimable" in result.notes[0] and "is not a ranking" not in result.notes[0]
    assert result.to_dict()["spearman_interval"] == [None, None]
