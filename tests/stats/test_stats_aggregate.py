"""rliable's aggregates (IQM, stratified bootstrap, probability of improvement) on a table."""

import math

import numpy as np
import pytest

from archaudit.stats.analyses.aggregate import (
    aggregate,
    iqm,
    macro_mean,
    probability_of_improvement,
    stratified_resample,
)
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.inference.resample import percentile_interval
from archaudit.stats.records.errors import DesignError
from archaudit.stats.records.table import Row, Table

TASKS = ("arc/score", "hellaswag/score", "piqa/score", "boolq/score")
RNG = np.random.default_rng(5)
SCORES = {
    "baseline": RNG.normal(0.50, 0.02, (4, 4)),
    "good": RNG.normal(0.52, 0.02, (5, 4)),
    "far": RNG.normal(0.70, 0.02, (3, 4)),
    "single": RNG.normal(0.55, 0.02, (1, 4)),
}


def tasks_table(scores=SCORES, diverged=("broken",)) -> Table:
    rows = []
    for arm, matrix in scores.items():
        for seed, values in enumerate(matrix):
            for task, value in zip(TASKS, values, strict=True):
                rows.append(Row(arm=arm, scale="s", seed=seed, metric=task, value=value))
            rows.append(Row(arm=arm, scale="s", seed=seed, metric="val_loss", value=3.0))
    for arm in diverged:
        rows.append(
            Row(arm=arm, scale="s", seed=0, metric="val_loss", value=math.nan, status="diverged")
        )
    return Table(tuple(rows))


def test_point_estimates_follow_the_definitions():
    result = aggregate(tasks_table(), n_boot=500)
    assert result.tasks == TASKS  # every <task>/score by default
    by_arm = {arm.arm: arm for arm in result.arms}
    good, base = SCORES["good"], SCORES["baseline"]
    assert by_arm["good"].mean == pytest.approx(good.mean())
    flat = np.sort(good.ravel())  # 20 scores: the IQM drops 5 from each end
    assert by_arm["good"].iqm == pytest.approx(flat[5:15].mean())
    pairs = (good[:, None, :] > base[None, :, :]) + 0.5 * (good[:, None, :] == base[None, :, :])
    assert by_arm["good"].prob_improvement == pytest.approx(pairs.mean())
    assert math.isnan(by_arm["baseline"].prob_improvement)
    assert "broken left out: diverged" in result.notes


def test_single_seed_intervals_are_not_estimable_never_zero_width():
    result = aggregate(tasks_table(), n_boot=500)
    single = {arm.arm: arm for arm in result.arms}["single"]
    for interval in (single.mean_interval, single.iqm_interval, single.prob_improvement_interval):
        assert all(math.isnan(bound) for bound in interval)
    assert single.aso is None and math.isnan(single.aso_eps_min)
    assert any("single" in note and "not estimable" in note for note in result.notes)


def test_intervals_are_seeded_and_cover_the_estimate():
    first = aggregate(tasks_table(), n_boot=500, seed=1)
    assert aggregate(tasks_table(), n_boot=500, seed=1) == first
    assert (
        aggregate(tasks_table(), n_boot=500, seed=2).arms[1].iqm_interval
        != first.arms[1].iqm_interval
    )
    good = {arm.arm: arm for arm in first.arms}["good"]
    assert good.iqm_interval[0] < good.iqm < good.iqm_interval[1]
    assert good.mean_interval[0] < good.mean < good.mean_interval[1]
    assert (
        good.prob_improvement_interval[0]
        < good.prob_improvement
        <= good.prob_improvement_interval[1]
    )


def test_an_interval_whose_replicates_never_vary_is_not_estimable():
    result = aggregate(tasks_table(), n_boot=300)
    far = {arm.arm: arm for arm in result.arms}["far"]
    assert far.prob_improvement == 1.0  # every seed beats every baseline seed on every task
    assert all(math.isnan(bound) for bound in far.prob_improvement_interval)
    assert "far: P(arm > baseline) interval not estimable, all 300 bootstrap replicates gave 1" in (
        result.notes
    )


def test_aso_on_the_seed_macro_averages():
    result = aggregate(tasks_table(), n_boot=200)
    far = {arm.arm: arm for arm in result.arms}["far"]
    assert result.aso_comparisons == 2  # the single-seed arm is not tested
    assert far.aso == "better" and far.aso_eps_min < result.aso_threshold
    assert far.aso_eps_min_reverse > 0.5


def test_lower_is_better_turns_improvement_around():
    higher = {a.arm: a for a in aggregate(tasks_table(), n_boot=100).arms}["good"]
    lower = {
        a.arm: a
        for a in aggregate(tasks_table(), JudgeOptions(lower_is_better=True), n_boot=100).arms
    }
    assert lower["good"].prob_improvement == pytest.approx(1 - higher.prob_improvement)
    assert lower["good"].mean == pytest.approx(-higher.mean)


def test_stratified_resample_keeps_each_task_column_within_its_task():
    scores = np.arange(12.0).reshape(3, 4)  # column j holds j, j + 4, j + 8
    replicates = stratified_resample(scores, 50, np.random.default_rng(0))
    assert replicates.shape == (50, 3, 4)
    assert np.all(replicates % 4 == np.arange(4))


def test_without_task_metrics_it_falls_back_to_the_loss_and_says_so():
    """Issue 22: `stats aggregate` failed with "no per-task metrics named '<task>/score'" on an
    audit without a suite; it aggregates val_loss (lower is better) as one stratum instead."""
    rows = [r for r in tasks_table().rows if r.metric == "val_loss"]
    rows = [Row(r.arm, r.scale, r.seed, r.metric, r.value - 0.1 * (r.arm == "far"), r.status)
            for r in rows]  # fmt: skip
    result = aggregate(Table(tuple(rows)))
    assert result.tasks == ("val_loss",)
    assert "aggregated over val_loss alone" in result.notes[0]
    far = next(a for a in result.arms if a.arm == "far")
    assert far.prob_improvement == 1.0  # a lower loss is better


def test_no_usable_metric_is_a_design_error():
    table = Table(tuple(r for r in tasks_table().rows if r.metric == "hellaswag/score"))
    table = Table(tuple(Row(r.arm, r.scale, r.seed, "acc", r.value) for r in table.rows))
    with pytest.raises(DesignError, match="--metric"):
        aggregate(table)


def test_point_estimates_agree_with_rliable():
    metrics = pytest.importorskip("rliable.metrics", reason="rliable is not installed")
    good, base = SCORES["good"], SCORES["baseline"]
    assert float(iqm(good)) == pytest.approx(metrics.aggregate_iqm(good), abs=1e-12)
    assert float(macro_mean(good)) == pytest.approx(metrics.aggregate_mean(good), abs=1e-12)
    assert float(probability_of_improvement(good, base)) == pytest.approx(
        metrics.probability_of_improvement(good, base), abs=1e-12
    )


def test_intervals_agree_with_rliable():
    """Percentile intervals of two independent 5,000-replicate stratified bootstraps agree
    within their Monte Carlo error; P(X > Y) moves in steps of 1/(n_x·n_y·tasks) = 1/80."""
    try:
        from rliable import library, metrics
    except Exception as error:  # rliable 1.2 needs arch < 8, and arch 7.2 breaks on pandas 3
        pytest.skip(f"rliable's bootstrap cannot be imported here: {error}")
    good, base = SCORES["good"], SCORES["baseline"]
    np.random.seed(0)  # rliable draws its indices from numpy's global generator
    reps = 5000
    _, theirs = library.get_interval_estimates(
        {"iqm": good, "poi": [good, base]},
        lambda *s: np.array(
            [metrics.aggregate_iqm(s[0]) if len(s) == 1 else metrics.probability_of_improvement(*s)]
        ),
        reps=reps,
    )
    rng = np.random.default_rng(0)
    ours_iqm = percentile_interval(iqm(stratified_resample(good, reps, rng)))
    ours_poi = percentile_interval(
        probability_of_improvement(
            stratified_resample(good, reps, rng), stratified_resample(base, reps, rng)
        )
    )
    assert ours_iqm == pytest.approx(tuple(theirs["iqm"].ravel()), abs=2e-3)
    assert ours_poi == pytest.approx(tuple(theirs["poi"].ravel()), abs=1 / 80 + 1e-9)


def run_cli(monkeypatch, capsys, command: str) -> tuple[int, str, str]:
    import shlex
    import sys

    from archaudit.cli import main

    monkeypatch.setattr(sys, "argv", ["archaudit", *shlex.split(command)])
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exit_:
        main()
    captured = capsys.readouterr()
    return exit_.value.code or 0, captured.out, captured.err


def test_cli_prints_the_library_result(monkeypatch, capsys, write_csv):
    import json

    from archaudit.stats import load_table

    rows = [("arm", "scale", "seed", "metric", "value")] + [
        (row.arm, row.scale, row.seed, row.metric, row.value)
        for row in tasks_table(diverged=()).rows
    ]
    path = write_csv(rows)
    options = "--metric arc/score --metric piqa/score --n-boot 200 --seed 3"
    code, out, _ = run_cli(monkeypatch, capsys, f"stats aggregate {path} {options} --json")
    expected = aggregate(load_table(path), metrics=("arc/score", "piqa/score"), n_boot=200, seed=3)
    assert code == 0 and json.loads(out) == json.loads(expected.to_json())
    code, text, _ = run_cli(monkeypatch, capsys, f"stats aggregate {path} {options}")
    assert code == 0 and "IQM" in text and "far" in text and "not estimable" in text
    assert "2 tasks at" in text
    code, text, _ = run_cli(monkeypatch, capsys, f"stats aggregate {path} --metric arc/score")
    assert code == 0 and "1 task at" in text  # issue 46: it said "1 tasks"
    code, _, err = run_cli(monkeypatch, capsys, f"stats aggregate {path} --metric arc/scor")
    assert code == 2 and "did you mean 'arc/score'" in err


def test_performance_profiles_are_the_share_of_scores_above_each_threshold():
    from archaudit.stats.analyses.aggregate import performance_profile

    scores = np.array([[0.1, 0.5], [0.3, 0.9]])
    assert performance_profile(scores, np.array([0.0, 0.2, 0.5, 1.0])).tolist() == [
        1.0,
        0.75,
        0.25,  # only 0.9 is above 0.5 (strictly)
        0.0,
    ]
    result = aggregate(tasks_table())
    assert set(result.profiles) == {a.arm for a in result.arms}
    far, base = result.profiles["far"], result.profiles["baseline"]
    assert len(far) == len(result.profile_taus) and all(
        f >= b for f, b in zip(far, base, strict=True)
    )


def test_tasks_at_chance_in_every_run_are_left_out_and_named():
    """A task flagged at chance in every run (`<task>/at_chance`) would pull every arm's IQM
    towards chance: it leaves the aggregate, as it leaves downstream_avg, and a note says so."""
    table = tasks_table()
    flags = [
        Row(arm=r.arm, scale="s", seed=r.seed, metric="boolq/at_chance", value=1.0)
        for r in table.rows
        if r.metric == "boolq/score"
    ]
    result = aggregate(Table((*table.rows, *flags)), n_boot=200)
    assert result.tasks == TASKS[:3]
    assert any(n.startswith("left out, no signal in this audit: boolq") for n in result.notes)
    assert aggregate(table, n_boot=200).tasks == TASKS  # nothing flagged: every task
