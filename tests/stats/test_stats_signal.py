"""Must-show 4: downstream tasks at chance (or constant) in every run leave downstream_avg,
cannot satisfy R6 and do not count toward the evidence grade's downstream criterion."""

from __future__ import annotations

import pytest

from archaudit.stats import judge
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.judging.signal import check_signal
from archaudit.stats.records.errors import TableError
from archaudit.stats.records.table import Row, Table

ARMS = {"baseline": (), "sigmoid_attn": ("downstream",), "qk_norm": ("cross_scale",)}
"""Each arm's duties, as the audit's results table carries them."""


def _audit(recall_at_chance: bool, agreement: float | None = None) -> Table:
    """3 arms × 3 seeds × 2 scales: val_loss, an informative induction task, a recall task at
    chance in every run (or not), and an agreement task (constant when `agreement` is set)."""
    rows = []
    for a, (arm, duties) in enumerate(ARMS.items()):
        for scale in ("s", "m"):
            for seed in range(3):
                noise = 0.01 * ((seed * 7 + a * 3) % 5)
                values = {
                    "val_loss": 2.0 - 0.05 * a + noise,
                    "induction/score": 0.6 + 0.1 * a + noise,
                    "induction/at_chance": 0.0,
                    "induction/bpb": 3.0 - 0.1 * a + noise,
                    "recall/score": 0.05 * seed,  # varies, but at the floor's interval
                    "recall/at_chance": 1.0 if recall_at_chance else float(seed != 0),
                    "recall/bpb": 5.0 - 0.1 * a + noise,
                    "downstream_avg": 0.123,  # what each run's own average said: recomputed
                }
                if agreement is not None:
                    values |= {"agreement/score": agreement, "agreement/at_chance": 0.0}
                rows += [
                    Row(arm, scale, seed, metric, value, duties=duties)
                    for metric, value in values.items()
                ]
    return Table(tuple(rows))


def test_task_at_chance_in_every_run_leaves_downstream_avg():
    table = _audit(recall_at_chance=True)
    check = check_signal(table)
    assert check.uninformative == {"recall": "at chance or at the floor in every run"}
    assert check.informative == ("induction",)
    judged = judge(table, "downstream_avg", JudgeOptions(scale="s"))
    baseline = [r.value for r in table.rows_for("induction/score", "s", "baseline")]
    assert judged.baseline_mean == pytest.approx(sum(baseline) / 3)  # induction only
    assert any("leaves out" in n and "recall" in n for n in judged.notes)
    assert not any(n.startswith("R6 not met") for n in judged.notes)  # induction informs
    assert "recall/score" not in check.table.metrics
    assert "recall/bpb" in check.table.metrics  # the continuous number keeps its signal


def test_task_at_chance_in_only_some_runs_stays():
    check = check_signal(_audit(recall_at_chance=False))
    assert check.uninformative == {}
    assert "recall/score" in check.table.metrics


def test_a_constant_task_is_uninformative():
    check = check_signal(_audit(recall_at_chance=False, agreement=0.43))
    assert check.uninformative == {"agreement": "the same score 0.43 in every run"}


def _only_chance_tasks() -> Table:
    table = _audit(recall_at_chance=True)
    drop = ("induction/score", "induction/at_chance")
    return Table(tuple(r for r in table.rows if r.metric not in drop))


def test_no_informative_task_cannot_satisfy_r6_or_the_grade():
    table = _only_chance_tasks()
    with pytest.raises(TableError, match="downstream_avg has no informative task"):
        judge(table, "downstream_avg", JudgeOptions(scale="s"))
    judged = judge(table, "val_loss", JudgeOptions(scale="s"))
    r6 = [n for n in judged.notes if n.startswith("R6 not met")]
    assert r6 and "sigmoid_attn" in r6[0]
    for arm in judged.arms:  # 3 seeds, 2 scales, Holm: only the downstream criterion lacks
        assert arm.grade_missing == ("downstream evaluation",), arm.arm


def test_an_informative_task_satisfies_the_grade():
    judged = judge(_audit(recall_at_chance=True), "val_loss", JudgeOptions(scale="s"))
    assert all(arm.grade == "A" for arm in judged.arms)
    assert not any(n.startswith("R6 not met") for n in judged.notes)


def test_a_table_without_task_rows_passes_through():
    table = Table(tuple(r for r in _audit(True).rows if r.metric == "val_loss"))
    assert check_signal(table).table is table


def test_a_downstream_bpb_judgement_is_no_loss_for_r6():
    judged = judge(_audit(recall_at_chance=True), "recall/bpb", JudgeOptions(scale="s"))
    assert judged.lower_is_better
    assert not any(n.startswith("R6") for n in judged.notes)
    assert any(
        n.startswith("R6") for n in judge(_audit(True), "val_loss", JudgeOptions(scale="s")).notes
    )


def test_an_arm_whose_downstream_sits_at_the_floor_is_not_graded_a():
    """Issue 32: grade A went to arms whose downstream scores sat at the floor. The induction
    task informs the audit (other arms score above chance), but every run of qk_norm flagged
    it at chance: qk_norm has no downstream evidence."""
    table = _audit(recall_at_chance=True)
    rows = [
        Row(r.arm, r.scale, r.seed, r.metric, 1.0, duties=r.duties)
        if r.arm == "qk_norm" and r.metric == "induction/at_chance"
        else r
        for r in table.rows
    ]
    judged = judge(Table(tuple(rows)), "val_loss", JudgeOptions(scale="s"))
    grades = {arm.arm: (arm.grade, arm.grade_missing) for arm in judged.arms}
    assert grades["qk_norm"] == ("B", ("downstream evaluation",))
    assert grades["sigmoid_attn"] == ("A", ())


def test_judging_a_task_metric_at_chance_names_it_as_such():
    """Issue 57: `stats --metric piqa_ho/acc` on an import whose task is at chance said the
    metric "is not in the table … (allowed: )" although its rows are there."""
    table = _audit(recall_at_chance=True)
    with pytest.raises(TableError) as err:
        judge(table, "recall/score", JudgeOptions(scale="s"))
    message = str(err.value)
    assert "'recall/score' is at chance or constant" in message
    assert "at chance or at the floor in every run" in message
    assert "judge recall/bpb" in message and "\n" not in message


def test_judging_a_constant_task_metric_names_the_constant():
    table = _audit(recall_at_chance=False, agreement=0.43)
    with pytest.raises(TableError, match=r"'agreement/score' is at chance or constant.*0\.43"):
        judge(table, "agreement/score", JudgeOptions(scale="s"))
