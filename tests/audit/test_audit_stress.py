"""`archaudit stress`: the [stress] section, the sweep's plan, reuse of the audit's runs, and
the stored result of the default stress audit (benchmarks/stress/stress.toml)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from audit_helpers import STRESS_AUDIT, stress_audit

from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.grid.store import materialize, write_done
from archaudit.audit.setup.spec import StressSpec, load_audit
from archaudit.audit.stability.stress import STRESS_DIR, StressPoint, stress_plan, unigram_loss
from archaudit.audit.stability.stress_checks import check_directions, directions_table
from archaudit.audit.stability.stress_result import (
    RELATIVE_THRESHOLD,
    SIGNALS,
    DepthPoint,
    StressResult,
    _depth_forecasts,
    analyse,
    read_result,
    write_result,
)
from archaudit.errors import ConfigError
from archaudit.metrics import PRIMARY_LOSS
from archaudit.rundir import METRICS
from archaudit.stats.analyses.stability import undeclarable

ROOT = Path(__file__).resolve().parents[2]
STORED = ROOT / "tests" / "data" / "stress" / "stress-tiny.json"
SMALL = ROOT / "tests" / "data" / "stress" / "stress-small.json"


def test_stress_section_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="6 rates spanning"):
        load_audit(stress_audit(tmp_path, "[stress]\nlr_factors = [1, 10, 100]\n"))
    with pytest.raises(ConfigError, match=r"stress\.seeds = 1"):
        load_audit(stress_audit(tmp_path, "[stress]\nseeds = 1\n"))
    with pytest.raises(ConfigError, match="lr_fators"):
        load_audit(stress_audit(tmp_path, "[stress]\nlr_fators = [1]\n"))


def test_plan_sizes_the_sweep_and_labels_its_runs(tmp_path: Path) -> None:
    spec = load_audit(stress_audit(tmp_path, "[stress]\ndepths = [2]\ndepth_arms = ['post_ln']\n"))
    plan = stress_plan(spec)
    sweep = [p for p in plan.points if p.kind == "lr"]
    depth = [p for p in plan.points if p.kind == "depth"]
    seeds = spec.stress.seeds
    assert len(sweep) == 2 * 6 * seeds and len(depth) == 2 * seeds  # baseline and post_ln
    assert {p.run.model.n_layers for p in depth} == {2}
    assert all(p.run.audit == "s-stress" for p in plan.points)
    assert plan.plan.audit_dir == spec.audit_dir / STRESS_DIR
    lrs = sorted({p.run.recipe.lr for p in sweep})
    assert lrs[-1] / lrs[0] == pytest.approx(300) and len(lrs) == 6
    assert {p.run.recipe.warmup_frac for p in plan.points} == {spec.recipe.warmup_frac}
    assert re.match(
        rf"stress test: {14 * seeds} runs \({14 * seeds} to train, 0 finished, 0 reused .* FLOPs, "
        r"[0-9.]+× the audit",
        plan.cost_line(),
    )


def test_a_finished_audit_run_is_reused(tmp_path: Path) -> None:
    spec = load_audit(stress_audit(tmp_path))
    audit_plan = make_plan(spec)
    materialize(audit_plan)
    run = audit_plan.runs[0]  # the baseline at the recipe's rate, seed 0
    write_done(audit_plan.run_dir(run), RunRecord.of_run(run, status="ok", metrics={}))
    plan = stress_plan(spec)
    reused = [p for p in plan.points if p.reused is not None]
    assert [(p.run.arm, p.run.seed, p.run.recipe.lr) for p in reused] == [
        ("baseline", 0, spec.recipe.lr)
    ]
    assert len(plan.plan.runs) == len(plan.points) - 1


def test_a_finished_stress_run_is_not_counted_to_train(tmp_path: Path) -> None:
    """Issue 43: `--plan` said "108 to train" after every run had finished."""
    spec = load_audit(stress_audit(tmp_path))
    before = stress_plan(spec)
    materialize(before.plan)
    done = before.plan.runs[0]
    write_done(before.plan.run_dir(done), RunRecord.of_run(done, status="ok", metrics={}))
    after = stress_plan(spec)
    assert len(after.plan.runs) == len(before.plan.runs) - 1 and after.finished == 1
    assert done not in after.plan.runs and len(after.points) == len(before.points)
    assert f"({len(after.plan.runs)} to train, 1 finished" in after.cost_line()


def test_runs_left_by_another_recipe_are_neither_finished_reused_nor_read(tmp_path: Path) -> None:
    """A folder whose run trained on another corpus draw (a pilot at another data_seed in the
    same runs folder) held a DONE, and `--plan` counted it finished, the sweep reused the
    audit's run and the analysis read it as the point's result."""
    from archaudit.audit.stability.stress import read_sweep_run

    first = load_audit(stress_audit(tmp_path))
    audit_plan, before = make_plan(first), stress_plan(first)
    materialize(audit_plan)
    materialize(before.plan)
    for plan, run in ((audit_plan, audit_plan.runs[0]), (before.plan, before.plan.runs[0])):
        write_done(plan.run_dir(run), RunRecord.of_run(run, status="ok", metrics={}))
    assert stress_plan(first).finished == 1  # the same recipe: finished and reused
    moved = stress_audit(tmp_path)
    moved.write_text(STRESS_AUDIT.replace("[recipe]\n", "[recipe]\ndata_seed = 99\n"))
    after = stress_plan(load_audit(moved))
    assert after.finished == 0 and not [p for p in after.points if p.reused is not None]
    assert len(after.plan.runs) == len(after.points)
    point = after.points[0]
    assert read_sweep_run(after.run_dir(point), point.run, first.recipe.lr) is None


def test_the_default_seeds_can_declare_an_arm_among_the_audit2026_arms() -> None:
    """Issue 43: at the old default of 2 seeds no arm of 6 or more could be declared."""
    from archaudit.mods.suites import SUITES

    default = StressSpec()
    arms = len(SUITES["audit2026"]) - 1  # besides the baseline
    assert undeclarable(default.seeds, default.lr_factors, arms, default.alpha) == ""
    assert undeclarable(2, default.lr_factors, arms, default.alpha)


def _finish(plan_dir: Path, point: StressPoint, broke: bool) -> None:
    """A finished stress run: stable (its loss falls to half the unigram loss), or diverged at
    its last step."""
    run_dir = plan_dir / point.run.path
    run_dir.mkdir(parents=True, exist_ok=True)
    steps, unigram = point.run.recipe.steps, unigram_loss(point.run.recipe)
    rows = [
        {"step": s, "loss": unigram * (1 - s / (2 * steps)), "grad_norm": 1.0}
        for s in range(1, steps + 1)
    ]
    (run_dir / METRICS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    final = {PRIMARY_LOSS: None if broke else rows[-1]["loss"]}
    record = RunRecord.of_run(
        point.run, status="ok", metrics=final, diverged_step=steps if broke else None
    )
    write_done(run_dir, record)


def test_rates_above_the_grid_until_the_baseline_breaks(tmp_path: Path) -> None:
    """Issue 43 item 2: while the baseline has not broken at the top rate trained, the next
    rate (the grid's last ratio again) is added for it and every arm still censored, at most
    `stress.extra_rates`; the range is then read over them, and the verdict's grid is kept."""
    spec = load_audit(stress_audit(tmp_path))
    first = stress_plan(spec)
    extra = spec.stress.extra_rates
    assert not [p for p in first.points if p.kind == "above"]
    assert f"up to {extra * 2 * spec.stress.seeds} more runs above the grid" in first.cost_line()
    for point in first.points:  # post_ln breaks at the top rate; the baseline does not
        top = point.run.recipe.lr == max(p.run.recipe.lr for p in first.points)
        _finish(first.plan.audit_dir, point, broke=top and point.run.arm == "post_ln")
    second = stress_plan(spec)
    above = [p for p in second.points if p.kind == "above"]
    factors = spec.stress.lr_factors
    step = factors[-1] / factors[-2]
    assert {p.run.arm for p in above} == {"baseline"} and len(above) == spec.stress.seeds
    expected = spec.recipe.lr * factors[-1] * step
    assert [p.run.recipe.lr for p in above] == pytest.approx([expected] * len(above))
    for point in above:  # the baseline breaks there: no further rate
        _finish(second.plan.audit_dir, point, broke=True)
    third = stress_plan(spec)
    assert [p.run.path for p in third.points] == [p.run.path for p in second.points]
    assert not third.plan.runs and "above the grid" not in third.cost_line()
    result = analyse(third)
    base = result.arm("baseline")
    assert base is not None and not base.censored
    assert base.extra_lrs == (above[0].run.recipe.lr,) and len(base.lrs) == len(factors)
    assert base.largest_stable_lr == base.lrs[-1]


def test_no_rate_above_the_grid_when_extra_rates_is_0(tmp_path: Path) -> None:
    spec = load_audit(stress_audit(tmp_path, "[stress]\nextra_rates = 0\n"))
    plan = stress_plan(spec)
    for point in plan.points:
        _finish(plan.plan.audit_dir, point, broke=False)
    again = stress_plan(spec)
    assert not [p for p in again.points if p.kind == "above"]
    result = analyse(again)
    assert all(a.censored and not a.extra_lrs for a in result.arms)


def test_the_depth_stress_stores_its_depth_sensitivity(tmp_path: Path) -> None:
    """Issue 54 (post_ln_depth): analyse judges how much each depth arm's loss rises with
    depth against the baseline's (ΔD), stores it in stress.json and reads it back."""
    spec = load_audit(
        stress_audit(
            tmp_path, "[stress]\ndepths = [2]\ndepth_arms = ['post_ln']\nextra_rates = 0\n"
        )
    )
    plan = stress_plan(spec)
    for point in plan.points:  # post_ln breaks at twice the layers; nothing else does
        deep = point.kind == "depth" and point.run.arm == "post_ln"
        _finish(plan.plan.audit_dir, point, broke=deep)
    result = analyse(stress_plan(spec))
    (found,) = result.depth_sensitivity
    assert found.arm == "post_ln" and found.delta > 0 and found.baseline_degradation == 0
    # 3 seeds, every split of the base stratum tied: the deeper one's 2 of C(6, 3) = 20
    assert found.p == pytest.approx(0.1, abs=0.02) and found.verdict == "within-noise"
    path = tmp_path / "stress.json"
    write_result(result, path)
    assert read_result(path).depth_sensitivity == result.depth_sensitivity


def test_the_default_depth_stress_covers_the_residual_and_norm_arms(tmp_path: Path) -> None:
    """Issue 43: without `depth_arms` the depth stress takes every swept R7 arm."""
    text = stress_audit(tmp_path, "[stress]\ndepths = [2]\n").read_text()
    path = tmp_path / "b.toml"
    path.write_text(text.replace('arms = ["post_ln"]', 'arms = ["post_ln", "softpick"]'))
    plan = stress_plan(load_audit(path))
    depth = {p.run.arm for p in plan.points if p.kind == "depth"}
    assert depth == {"baseline", "post_ln"}  # post_ln is a norm arm; softpick is not R7


@pytest.mark.parametrize("stored", [STORED, SMALL], ids=["stress-tiny", "stress-small"])
def test_stored_result_reads_back_and_docs_reproduce_its_table(stored: Path) -> None:
    result = read_result(stored)
    assert StressResult.from_json(json.loads(json.dumps(result.to_json()))) == result
    table = directions_table(check_directions(result))
    docs = (ROOT / "docs" / "stability.md").read_text()
    assert table in docs, "regenerate: python benchmarks/stress.py --docs"
    assert {a.arm for a in result.arms} >= {"baseline", "post_ln", "qk_norm", "z_loss"}
    assert all(len(a.lrs) >= 6 and a.lrs[-1] / a.lrs[0] >= 100 for a in result.arms)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('correction = "bogus"', "unknown correction 'bogus'"),
        ("permutations = 1000000000000", r"stress\.permutations = 1000000000000 must be a whole"),
        ("depths = [2.5]", r"stress\.depths = \[2\.5\]: whole multiples"),
        ("depths = [nan]", r"stress\.depths = \[nan\] must be a list of finite numbers"),
        ("seeds = 1000000000000", r"stress\.seeds = 1000000000000 must be a whole number"),
        ("alpha = 1.5", r"stress\.alpha = 1\.5 must be in \(0, 1\)"),
    ],
)
def test_the_stress_table_is_checked_before_anything_is_planned(
    tmp_path: Path, table: str, said: str
) -> None:
    """Issue 44: these passed `--plan` and failed after the sweep trained (a 29 TiB
    MemoryError for the permutations), truncated 2.5 to 2, or grew memory without bound."""
    with pytest.raises(ConfigError, match=said):
        load_audit(stress_audit(tmp_path, f"[stress]\n{table}\n"))


def test_cli_plan_prints_the_cost(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from archaudit.cli import app, register_commands

    register_commands()
    out = CliRunner().invoke(app, ["stress", str(stress_audit(tmp_path)), "--plan", "--json"])
    assert out.exit_code == 0, out.output
    cost = json.loads(out.stdout)
    assert cost["cost"].startswith(f"stress test: {12 * StressSpec().seeds} runs")
    # issue 43: the probe's time of the runs to train, as `archaudit plan` estimates it
    assert cost["estimated_wall_s"] > 0 and cost["estimated_cpu_s"] > 0
    # the rates above the grid: each run as one of the grid's (the same shape) costs
    # issue 54: the command's own start and its server's preload count in its CPU
    assert cost["start_cpu_s"] > 0 and "the command's start" in cost["time"]
    per_run = (cost["estimated_cpu_s"] - cost["start_cpu_s"]) / (12 * StressSpec().seeds)
    above = StressSpec().extra_rates * 2 * StressSpec().seeds
    assert cost["above_grid_cpu_s"] == pytest.approx(above * per_run)
    assert "the runs above the grid up to" in cost["time"]
    bare = CliRunner().invoke(app, ["stress", str(stress_audit(tmp_path)), "--plan", "--no-probe"])
    assert bare.exit_code == 0 and "min on" not in bare.output


def test_report_shows_the_stored_stress_test(tmp_path: Path) -> None:
    from archaudit.report.data import ReportData
    from archaudit.report.stability import stability

    result = read_result(STORED)
    section = stability(result, _colours(result))
    keys = [f.key for block in section.blocks for f in getattr(block, "figures", ())]
    assert section.absent is None and keys[:2] == ["stability-lr", "stability-forest"]
    assert isinstance(ReportData.stress, property)  # the findings' stability slice


def test_every_declared_stress_test_is_in_stats_the_trackers_rows_and_the_report() -> None:
    """The depth-sensitivity and logit tests decide replication claims, but `stats`, the
    trackers and the report showed only the rate and depth tests: one set of rows now feeds
    all three, and the page's table lists every declared test besides the rate sweep."""
    from archaudit.audit.results.findings_record import StabilityRow
    from archaudit.report.blocks import Grid
    from archaudit.report.stability import stability

    result = read_result(ROOT / "tests" / "data" / "replications" / "xiong2020_depth-stress.json")
    rows = {(r.metric, r.arm): r for r in StabilityRow.of(result)}
    loss, logits = rows[("stability/depth-loss", "post_ln")], rows[("stability/logits", "post_ln")]
    assert loss.verdict == "more-fragile" and loss.p_adj == result.depth_sensitivity[0].p_adjusted
    assert logits.measure == result.logit_verdicts[0].measure
    section = stability(result, _colours(result))
    grids = [b for b in section.blocks if isinstance(b, Grid) and "Declared" in b.caption]
    assert len(grids) == 1
    shown = {(row[1], row[4]) for row in grids[0].rows}
    assert shown == {(r.arm, r.verdict) for r in rows.values() if r.metric != "stability/rates"}
    assert any("ΔD" in row[0] for row in grids[0].rows)


def _colours(result: StressResult) -> dict:
    from archaudit.report.palette import arm_colours

    return arm_colours([a.arm for a in result.arms], "baseline")


@pytest.mark.slow
def test_stress_trains_judges_and_stores(tmp_path: Path) -> None:
    """End to end on a micro audit: every point trains, the result is stored and printed."""
    from typer.testing import CliRunner

    from archaudit.cli import app, register_commands

    register_commands()
    path = stress_audit(tmp_path, "[executor]\nworkers = 2\nthreads = 1\n")
    out = CliRunner().invoke(app, ["stress", str(path), "-q"])
    assert out.exit_code == 0, out.output
    assert "post_ln" in out.stdout and "forecast backtest" in out.stdout
    result = read_result(tmp_path / "runs" / "s" / STRESS_DIR / "stress.json")
    assert result.missing == 0 and {a.arm for a in result.arms} == {"baseline", "post_ln"}
    assert all(t.signals["log_z_max"] for t in result.traces)


def test_a_deep_or_foreign_stress_json_is_one_line(tmp_path: Path) -> None:
    from archaudit.audit.stability.stress_result import read_result
    from archaudit.errors import DataError

    deep = tmp_path / "deep.json"
    deep.write_text('{"arms": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(DataError, match=r"deep\.json: cannot read the stress result"):
        read_result(deep)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(DataError, match=r"list\.json: not a stress result"):
        read_result(listed)


def test_the_depth_forecast_is_relative_to_the_baseline() -> None:
    """Issue 43: the absolute fit placed an arm's threshold at 4 layers where it was stable; a
    signal that grows with depth as the baseline's does forecasts no break."""

    def point(arm: str, layers: int, value: float) -> DepthPoint:
        return DepthPoint(arm, layers, 0.03, 2, 0, 2.0, dict.fromkeys(SIGNALS, value))

    growth = 2.0  # the arm's signal over the baseline's doubles from 2 to 4 layers
    points = [
        point("baseline", 2, 10.0),
        point("baseline", 4, 40.0),
        point("alike", 2, 10.0),
        point("alike", 4, 40.0),
        point("grows", 2, 10.0),
        point("grows", 4, 40.0 * growth),
    ]
    got = {f.arm: f for f in _depth_forecasts(points)}
    assert set(got) == {"alike", "grows"} and all(f.relative for f in got.values())
    assert got["alike"].forecast["grad_norm"] == math.inf
    # ln r grows by ln 2 per 2 layers from r = 1 at 2 layers: r = 4 at 2 + 2·log2(4)
    expected = 2 + 2 * math.log(RELATIVE_THRESHOLD) / math.log(growth)
    assert got["grows"].forecast["grad_norm"] == pytest.approx(expected)


def test_the_table_shows_censored_ranges_depth_and_useless_forecasts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: "≥ top rate", the depth stress and its verdict in the CLI table, and "not
    useful here" for a forecast whose warnings are mostly wrong."""
    from archaudit.cli.stress_cmd import print_result

    monkeypatch.setenv("COLUMNS", "400")
    result = read_result(SMALL)
    print_result(result)
    out = capsys.readouterr().out
    censored = [a for a in result.arms if a.censored]
    assert censored and f"≥ {censored[0].lrs[-1]:.3g}" in out
    assert "depth stress" in out
    for v in result.depth_verdicts:
        assert v.arm in out and v.verdict in out
    useless = [b for b in result.backtests if not b.useful]
    assert useless and out.count("not useful here") == len(useless)


def test_cli_plan_says_when_the_sweep_cannot_declare_an_arm(tmp_path: Path) -> None:
    """Issue 43: at 2 seeds per rate the primary test's smallest p is 2/6³ ≈ 0.0093, so below
    that first Holm threshold no arm can be declared; the plan says so (and how many seeds could)
    before anything trains, and says nothing where the sweep can."""
    from typer.testing import CliRunner

    from archaudit.cli import app, register_commands

    register_commands()
    (tmp_path / "default").mkdir()
    strict = stress_audit(tmp_path, "[stress]\nseeds = 2\nalpha = 0.005\n")
    for path, said in ((strict, True), (stress_audit(tmp_path / "default"), False)):
        out = CliRunner().invoke(app, ["stress", str(path), "--plan", "--no-probe", "--json"])
        assert out.exit_code == 0, out.output
        power = json.loads(out.stdout).get("power", "")
        assert ("set stress.seeds = 3" in power) == said, power


def test_sensitivity_delta_adds_each_side_of_the_intervals_apart() -> None:
    """ΔS = S(qk_norm) − S(baseline): below, the arm's reach below and the baseline's above
    in quadrature; above, the mirror (the S intervals are not symmetric)."""
    from dataclasses import replace

    result = read_result(STORED)
    arm, base = result.arm("qk_norm"), result.arm("baseline")
    assert arm is not None and base is not None
    arm = replace(arm, sensitivity_interval=(arm.sensitivity - 0.1, arm.sensitivity + 0.4))
    base = replace(base, sensitivity_interval=(base.sensitivity - 0.3, base.sensitivity + 0.2))
    swapped = {"qk_norm": arm, "baseline": base}
    arms = tuple(swapped.get(a.arm, a) for a in result.arms)
    checks = check_directions(replace(result, arms=arms))
    check = next(c for c in checks if c.measure.startswith("ΔS"))
    delta = arm.sensitivity - base.sensitivity
    assert check.estimate == pytest.approx(delta)
    assert check.interval == pytest.approx(
        (delta - math.hypot(0.1, 0.2), delta + math.hypot(0.4, 0.3))
    )


def test_the_xiong_pilot_shows_the_trend_the_depth_test_missed() -> None:
    """Issue 54 (post_ln_depth): xiong2020.toml's seeds 3-14, their depth-stress runs kept
    (tests/data/stress/xiong2020-depth-pilot.json). The depth test read them within-noise
    (p 0.72: post_ln better at 4 layers, worse at 8, nothing broke); post_ln's loss rose
    1.0 nats from 2 layers to 4 and 8, the baseline's 0.02: the depth-sensitivity test sees
    it. This is the pilot that chose the test, not its confirmation."""
    from archaudit.stats.analyses.depth_sensitivity import judge_depth_sensitivity

    result = read_result(ROOT / "tests" / "data" / "stress" / "xiong2020-depth-pilot.json")
    (depth,) = result.depth_verdicts
    assert depth.verdict == "within-noise" and depth.p_adjusted > 0.5
    (found,) = judge_depth_sensitivity(result.pilot(depth=True), "baseline", permutations=999)
    assert found.verdict == "more-fragile" and found.p_adjusted == pytest.approx(0.001)
    assert found.delta == pytest.approx(0.973, abs=0.001)
    assert found.degradation == pytest.approx(0.997, abs=0.001)


def test_the_table_prints_the_depth_sensitivity(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The confirming run of post_ln_depth (tests/data/replications/): its ΔD line."""
    from archaudit.cli.stress_cmd import print_result

    monkeypatch.setenv("COLUMNS", "400")
    result = read_result(ROOT / "tests" / "data" / "replications" / "xiong2020_depth-stress.json")
    print_result(result)
    out = capsys.readouterr().out
    (found,) = result.depth_sensitivity
    line = next(x for x in out.splitlines() if x.startswith("depth sensitivity, post_ln"))
    assert "ΔD 0.798" in line and "more-fragile" in line and "holm over 1" in line
    assert found.p_adjusted is not None and found.p_adjusted < 0.05
