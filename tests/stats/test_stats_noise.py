"""The noise floor: pooled over every multi-seed group, with its chi-square interval, and one
test per family whatever the seeds per arm."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from archaudit.stats import judge
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.records.errors import ZeroNoiseError
from archaudit.stats.records.table import Row, Table


def test_sigma_pools_baseline_anchors_and_multi_seed_arms(make_table):
    values = {
        "baseline": [1.0, 1.2, 1.1],
        "anchor": [2.0, 2.6, 2.3, 2.9],
        "two": [5.0, 5.4],
        "one": [1.5],
    }
    judgement = judge(make_table(values), "acc", JudgeOptions(anchors=["anchor"]))
    groups = [values[a] for a in ("baseline", "anchor", "two")]
    dof = sum(len(g) - 1 for g in groups)
    sigma = np.sqrt(sum((len(g) - 1) * np.var(g, ddof=1) for g in groups) / dof)
    assert judgement.sigma_dof == dof == 6
    assert judgement.sigma == pytest.approx(sigma)
    assert judgement.sigma_groups == ("baseline", "anchor", "two")
    low, high = judgement.sigma_interval
    assert low == pytest.approx(sigma * np.sqrt(dof / stats.chi2.ppf(0.975, dof)))
    assert high == pytest.approx(sigma * np.sqrt(dof / stats.chi2.ppf(0.025, dof)))
    assert judgement.design.design.sigma_dof == dof


def test_identical_baseline_seeds_are_fine_when_anchors_supply_the_variance(make_table):
    # Defect: ZeroNoiseError looked only at the baseline's spread.
    values = {"baseline": [0.5, 0.5, 0.5], "anchor": [0.4, 0.6, 0.5], "a": [0.9]}
    judgement = judge(make_table(values), "acc", JudgeOptions(anchors=["anchor"]))
    assert judgement.sigma == pytest.approx(np.sqrt(0.02 / 4))
    with pytest.raises(ZeroNoiseError, match="noise floor is zero"):
        judge(make_table({**values, "anchor": [0.4, 0.4]}), "acc", JudgeOptions(anchors=["anchor"]))


def test_one_test_per_family_when_seeds_per_arm_differ(make_table):
    # Defect: a 2-seed arm with a larger Δ came out weaker than a 1-seed arm with a smaller one
    # (Welch on 2 seeds against the z-test on 1). One family, one test: `robust` (Welch on the
    # 2 seeds, the 6σ-bounded prediction t on the single one).
    values = {"baseline": [0.0, 1.0, 2.0], "one": [4.0], "two": [4.5, 5.5]}
    judgement = judge(make_table(values), "acc", JudgeOptions(correction="none"))
    one, two = judgement.arm("one"), judgement.arm("two")
    assert one.test == two.test == judgement.test == "robust"
    assert two.delta > one.delta
    assert two.p < one.p
    assert two.statistic > one.statistic


def test_sigma_that_differs_wildly_between_scales_is_noted():
    rows = [
        Row(arm=arm, scale=scale, seed=seed, metric="val_loss", value=value)
        for scale, spread in (("d48", 0.0036), ("d64", 0.0122))
        for arm, level in (("baseline", 3.0), ("a", 3.1))
        for seed, value in enumerate(level + spread * np.array([-1.0, 0.0, 1.0]))
    ]
    notes = judge(Table(tuple(rows)), "val_loss", JudgeOptions(scale="d48")).notes
    assert any("differs 3.4× between scales" in note for note in notes)
    one_scale = Table(tuple(r for r in rows if r.scale == "d48"))
    assert not any("between scales" in note for note in judge(one_scale, "val_loss").notes)
