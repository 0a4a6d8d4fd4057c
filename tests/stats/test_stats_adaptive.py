"""Adaptive seeding: would one more seed change a verdict?"""

import math

import numpy as np
import pytest

from archaudit.stats import adaptive_seeding, judge
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.records.table import Row, Table


def test_settled_and_borderline_arms(make_table):
    # "far" is far above with tight seeds: settled (far: the baseline, wider than the arms, keeps
    # its own variance in the moderated Welch t). "edge" sits near the boundary. (The default
    # correction: `none` is above α for two arms, so its verdicts are nominal and never change.)
    values = {"baseline": [-1.0, 0.0, 1.0], "far": [100.0, 100.1, 99.9], "edge": [2.4, 2.6]}
    table = make_table(values)
    judgement = judge(table, "acc", JudgeOptions())
    advice = {a.arm: a for a in adaptive_seeding(table, judgement).arms}
    assert advice["far"].p_change == 0.0 and not advice["far"].add_seed
    # Monte Carlo of the same question through judge() on grown tables.
    rng = np.random.default_rng(0)
    draws = rng.normal(2.5, judgement.sigma * math.sqrt(1 + 1 / 2), 400)
    changed = [
        judge(make_table({**values, "edge": [2.4, 2.6, x]}), "acc", JudgeOptions())
        .arm("edge")
        .verdict
        != judgement.arm("edge").verdict
        for x in draws
    ]
    assert advice["edge"].p_change == pytest.approx(np.mean(changed), abs=0.08)
    assert advice["edge"].p_change > 0.15 and advice["edge"].add_seed


def test_incomplete_arms_need_their_seeds_and_diverged_ones_do_not():
    rows = [
        Row(arm="baseline", scale="s", seed=s, metric="acc", value=v)
        for s, v in enumerate((0.0, 1.0, -1.0))
    ]
    rows += [
        Row(arm="half", scale="s", seed=0, metric="acc", value=0.5),
        Row(arm="half", scale="s", seed=1, metric="acc", value=math.nan),
        Row(arm="boom", scale="s", seed=0, metric="acc", value=math.nan, status="diverged"),
    ]
    table = Table(tuple(rows))
    advice = {a.arm: a for a in adaptive_seeding(table, judge(table, "acc")).arms}
    assert advice["half"].add_seed and math.isnan(advice["half"].p_change)
    assert not advice["boom"].add_seed
