"""Issue 54's stress test: fresh seeds, the depth test's plan warning, the logit test, the group
test in the stored result, the power the plan states from a pilot, and the forecast gate."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from audit_helpers import STRESS_AUDIT, stress_audit

from archaudit.audit.setup.spec import load_audit
from archaudit.audit.stability.stress import stress_plan
from archaudit.audit.stability.stress_power import plan_power, read_pilot
from archaudit.audit.stability.stress_result import (
    RESULT_FILE,
    SignalTrace,
    StressResult,
    logit_run,
    read_result,
    write_result,
)
from archaudit.errors import ConfigError, DataError
from archaudit.stats.analyses.forecast import Backtest
from archaudit.stats.analyses.logits import LogitRun, judge_logits
from archaudit.stats.analyses.stability import (
    MORE_FRAGILE,
    MORE_ROBUST,
    WITHIN_NOISE,
    Sweep,
    judge_group,
)
from archaudit.stats.analyses.sweeps import SweepModel, breaking_at_top, simulate_sweep

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "data" / "stress" / "stress-small.json"


def test_the_seed_offset_starts_the_sweep_on_fresh_seeds(tmp_path: Path) -> None:
    """One offset for the grid and the sweep (`[seeds] offset`): a confirming stress run
    trains none of its pilot's seeds."""
    offset = STRESS_AUDIT.replace("noise_floor = 2\n", "noise_floor = 2\noffset = 3\n")
    path = tmp_path / "a.toml"
    path.write_text(offset + "[stress]\ndepths = [2]\n")
    plan = stress_plan(load_audit(path))
    assert {p.run.seed for p in plan.points} == {3, 4, 5}
    assert all(p.run.path.endswith(("seed-3", "seed-4", "seed-5")) for p in plan.points)
    with pytest.raises(ConfigError, match=r"stress\.first_seed"):
        load_audit(stress_audit(tmp_path, "[stress]\nfirst_seed = 3\n"))


def test_the_plan_says_when_the_depth_test_cannot_declare(tmp_path: Path) -> None:
    """Issue 54: at 2 seeds a depth stress over 2 depths at one rate has an exact floor of
    2/36 = 0.056 > α; the plan said nothing."""
    at_2 = stress_plan(load_audit(stress_audit(tmp_path, "[stress]\nseeds = 2\ndepths = [2, 4]\n")))
    assert "depth test" in at_2.power_note() and "0.056" in at_2.power_note()
    at_3 = stress_plan(load_audit(stress_audit(tmp_path, "[stress]\nseeds = 3\ndepths = [2, 4]\n")))
    assert at_3.power_note() == ""


def test_fragile_names_a_swept_arm(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"stress\.fragile: 'post_lm'.*post_ln"):
        stress_plan(load_audit(stress_audit(tmp_path, "[stress]\nfragile = ['post_lm']\n")))
    with pytest.raises(ConfigError, match="baseline is the reference"):
        stress_plan(load_audit(stress_audit(tmp_path, "[stress]\nfragile = ['baseline']\n")))


def _logits(
    arm: str, lrs: list[float], seeds: int, attn: float, rng: np.random.Generator
) -> list[LogitRun]:
    return [
        LogitRun(arm, lr, s, True, attn * lr * math.exp(rng.normal(0, 0.1)), 5 + rng.normal(0, 0.3))
        for lr in lrs
        for s in range(seeds)
    ]


def test_the_logit_test_declares_smaller_attention_logits_and_not_a_copy() -> None:
    rng = np.random.default_rng(0)
    lrs = [1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1]
    runs = {
        "baseline": _logits("baseline", lrs, 3, 100.0, rng),
        "qk_norm": _logits("qk_norm", lrs, 3, 10.0, rng),
        "copy": _logits("copy", lrs, 3, 100.0, rng),
    }
    verdicts = {v.arm: v for v in judge_logits(runs, "baseline", permutations=999)}
    assert verdicts["qk_norm"].verdict == MORE_ROBUST
    assert verdicts["qk_norm"].measure == "attn_logit" and verdicts["qk_norm"].z[0] < 0
    assert verdicts["copy"].verdict == WITHIN_NOISE
    broke = [dataclasses.replace(r, stable=False) if r.lr > 0.05 else r for r in runs["copy"]]
    worse = judge_logits({**runs, "copy": broke}, "baseline", permutations=999)
    assert {v.arm: v.verdict for v in worse}["copy"] == MORE_FRAGILE


def test_a_run_s_logit_measures_come_from_its_trace() -> None:
    result = read_result(SMALL)
    trace = result.traces[0]
    shaped = SignalTrace(
        trace.arm,
        trace.lr,
        trace.seed,
        trace.layers,
        None,
        (1, 2, 3),
        {"attn_logit_max": (3.0, 9.0, 4.0), "log_z_max": (-1.0, -6.0, math.nan)},
    )
    run = next(r for r in _sweep_runs(result) if r.arm == trace.arm)
    got = logit_run(run, shaped)
    assert (got.attn_logit, got.log_z) == (9.0, 6.0)


def _sweep_runs(result: StressResult) -> list:
    rng = np.random.default_rng(0)
    return simulate_sweep(result.arms[0].arm, SweepModel(), 2, rng)


def _pilot(tmp_path: Path, fragile_arm: bool) -> Path:
    """A stored stress test whose post_ln broke at the top two rates (or did not)."""
    rng = np.random.default_rng(1)
    quiet = SweepModel()
    model = breaking_at_top(quiet, 2) if fragile_arm else quiet
    runs = {"baseline": simulate_sweep("baseline", quiet, 3, rng)}
    runs["post_ln"] = simulate_sweep("post_ln", model, 3, rng)
    result = dataclasses.replace(
        read_result(SMALL), sweep_runs=tuple(r for rs in runs.values() for r in rs), depth_runs=()
    )
    path = tmp_path / "pilot" / RESULT_FILE
    path.parent.mkdir(parents=True)
    write_result(result, path)
    return path.parent


def test_the_plan_states_the_power_from_a_pilot(tmp_path: Path) -> None:
    spec = load_audit(stress_audit(tmp_path, "[stress]\nseeds = 4\n"))
    strong = plan_power(spec, read_pilot(_pilot(tmp_path, True)), trials=40)
    assert [(p.test, p.arm, p.seeds) for p in strong] == [("rate", "post_ln", 4)]
    assert strong[0].power >= 0.8 and "reached" in strong[0].line()
    weak = plan_power(spec, read_pilot(_pilot(tmp_path / "null", False)), trials=40)
    assert weak[0].power < 0.5 and "0.8" in weak[0].line()


def test_a_pilot_without_runs_is_one_line_that_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / RESULT_FILE
    write_result(dataclasses.replace(read_result(SMALL), sweep_runs=()), path)
    with pytest.raises(DataError, match=r"stores no runs.*re-analyse"):
        read_pilot(path)


def test_cli_plan_prints_the_pilot_power(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from archaudit.cli import app, register_commands

    register_commands()
    pilot = _pilot(tmp_path, True)
    path = stress_audit(tmp_path, "[stress]\nseeds = 4\n")
    args = ["stress", str(path), "--plan", "--no-probe", "--json", "--pilot", str(pilot)]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    lines = json.loads(out.stdout)["pilot_power"]
    assert lines[0]["arm"] == "post_ln" and lines[0]["power"] >= 0.8


def test_the_stored_result_keeps_the_group_logit_verdicts_and_runs(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    quiet = SweepModel()
    sweeps = {
        a: Sweep.of(a, simulate_sweep(a, m, 3, rng))
        for a, m in (("baseline", quiet), ("f", breaking_at_top(quiet, 2)), ("ok", quiet))
    }
    group = judge_group(sweeps, ["f"], "baseline", permutations=199)
    logits = judge_logits(
        {a: _logits(a, list(quiet.lrs), 3, 10.0, rng) for a in sweeps}, "baseline", permutations=99
    )
    result = dataclasses.replace(
        read_result(SMALL),
        group=group,
        logit_verdicts=tuple(logits),
        sweep_runs=tuple(r for s in sweeps.values() for rs in s.by_rate for r in rs),
    )
    path = tmp_path / RESULT_FILE
    write_result(result, path)
    back = read_result(path)
    assert back.group == group and back.group is not None and back.group.verdict == MORE_FRAGILE
    assert back.logit_verdicts == tuple(logits)
    assert len(back.sweep_runs) == 3 * 6 * 3 and back.pilot()["f"][0].arm == "f"


def test_a_forecast_is_shown_only_where_it_beats_its_false_alarm_rate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 54: the gradient norm's forecast warned on 69-71% of stable runs; a forecast
    whose hit rate does not beat its false-alarm rate is not printed as one."""
    from archaudit.cli.stress_cmd import print_result

    sharp = Backtest("attn_logit_max", 4.0, 60, 6, 5, (10, 12, 9, 20, 11), 40, 1, True)
    chance = Backtest("grad_norm", 4.0, 60, 6, 4, (3, 4, 5, 6), 40, 28, True)
    precise_but_rare = Backtest("log_z_max", 4.0, 60, 10, 1, (7,), 40, 0, True)
    assert sharp.useful and sharp.gate_p < 0.05
    assert not chance.useful and chance.gate_p > 0.05  # 4/6 hits against 28/40 alarms
    assert not precise_but_rare.useful  # right when it warns, but 1/10 hits is chance
    monkeypatch.setenv("COLUMNS", "400")
    result = dataclasses.replace(read_result(SMALL), backtests=(sharp, chance, precise_but_rare))
    print_result(result)
    out = capsys.readouterr().out
    assert out.count("not useful here") == 2 and "p vs chance" in out


def test_the_report_prints_a_forecast_s_lead_only_where_it_beats_chance() -> None:
    from archaudit.report.stability import _backtest_table

    sharp = Backtest("attn_logit_max", 4.0, 60, 6, 5, (10, 12, 9, 20, 11), 40, 1, True)
    chance = Backtest("grad_norm", 4.0, 60, 6, 4, (3, 4, 5, 6), 40, 28, True)
    result = dataclasses.replace(read_result(SMALL), backtests=(sharp, chance))
    rows = {row[0]: row for row in _backtest_table(result).rows}
    assert rows["attn_logit_max"][4] == "11" and rows["grad_norm"][4] == "not useful here"
