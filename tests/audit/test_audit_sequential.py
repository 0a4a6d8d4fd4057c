"""`run --until-settled`: the audit file's [seeds] policy, the round record, and the loop itself
with a stand-in for training (seed values drawn from a fixed function of arm and seed)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from archaudit.audit.execute import sequential
from archaudit.audit.execute.coordinator import AuditOutcome
from archaudit.audit.execute.sequential import (
    AddedSeed,
    Round,
    SettleOptions,
    extend_plan,
    publish_round,
    read_rounds,
    run_until_settled,
)
from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.results import loop_summary
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import app, register_commands
from archaudit.errors import ConfigError
from archaudit.stats.simulation import sequential as loop_sim

ARMS = ["qk_norm", "geglu", "post_ln", "softpick"]
EFFECT = {"post_ln": 0.5}
"""val_loss shift per arm (σ = 0.01): post_ln is 50σ worse, the rest are null."""
SPREAD: dict[str, float] = {}
"""Seed SD per arm in units of 0.01 (1 when absent): a test may give an arm a wider spread."""


def tiny_plan(write_audit, **seeds):
    spec = load_audit(write_audit(arms=ARMS, seeds={"noise_floor": 3, "arms": 1, **seeds}))
    return make_plan(spec)


def fake_value(arm: str, seed: int) -> float:
    rng = np.random.default_rng([sum(map(ord, arm)), seed])
    return 3.0 + EFFECT.get(arm, 0.0) + 0.01 * SPREAD.get(arm, 1.0) * float(rng.normal())


def fake_run_audit(plan, *, stop_after: int | None = None, **_):
    """Bring every run of `plan` to DONE with `fake_value`, as an executor would."""
    store.materialize(plan)
    finished = 0
    for run in plan.runs:
        run_dir = plan.run_dir(run)
        if (run_dir / store.DONE).exists():
            continue
        if stop_after is not None and finished == stop_after:
            raise KeyboardInterrupt  # the coordinator dies in the middle of a round
        metrics = {"val_loss": fake_value(run.arm, run.seed)}
        store.write_done(run_dir, RunRecord.of_run(run, status="ok", metrics=metrics))
        finished += 1
    store.refresh_export(plan.audit_dir)
    counts = {"done": len(plan.runs)}
    return AuditOutcome(plan.audit_dir, counts, {}, plan.audit_dir / store.RESULTS_FILE)


@pytest.fixture
def fake_training(monkeypatch):
    monkeypatch.setattr(sequential, "run_audit", fake_run_audit)


def rounds_of(audit_dir: Path) -> list[dict]:
    return [r.to_json() for r in read_rounds(audit_dir)]


# ---------------------------------------------------------------------------------------------
# the audit file


def test_seeds_policy_is_read_and_checked(write_audit):
    spec = load_audit(write_audit(seeds={"policy": "sequential", "max": 4, "primary": ["x"]}))
    assert (spec.seeds.policy, spec.seeds.max, spec.seeds.primary) == ("sequential", 4, ("x",))
    with pytest.raises(ConfigError, match="did you mean 'sequential'"):
        load_audit(write_audit(seeds={"policy": "sequentail"}))
    with pytest.raises(ConfigError, match=r"seeds\.max = 1 must be >= seeds\.arms = 2"):
        load_audit(write_audit(seeds={"policy": "sequential", "max": 1, "arms": 2}))
    assert load_audit(write_audit(seeds={"max": 1, "arms": 2})).seeds.policy == "fixed"


# ---------------------------------------------------------------------------------------------
# the record


def test_a_round_is_published_once_and_the_first_writer_wins(tmp_path):
    first = Round(1, {"a/s": 2}, (AddedSeed("a", "s", 1, "open"),))
    other = Round(1, {"a/s": 1}, ())
    assert publish_round(tmp_path, first) == first
    assert publish_round(tmp_path, other) == first  # a second coordinator follows the record
    assert read_rounds(tmp_path) == [first]
    assert not list((tmp_path / sequential.RECORD_DIR).glob(".*"))


def test_added_seeds_are_runs_of_their_own_with_a_note(write_audit):
    plan = tiny_plan(write_audit)
    added = AddedSeed("geglu", "xs", 1, "val_loss still open")
    grown = extend_plan(plan, [Round(1, {}, (added,))])
    new = grown.runs[-1]
    old = next(r for r in plan.runs if r.arm == "geglu")
    assert (new.seed, new.path) == (1, "geglu/xs/seed-1")
    assert new.run_id != old.run_id and new.model == old.model and new.recipe == old.recipe
    note = grown.notes[-1]
    assert note.rule == "seed" and "round 1: val_loss still open" in note.message


# ---------------------------------------------------------------------------------------------
# the loop


def test_each_round_says_what_it_runs_before_the_total_grows(write_audit, fake_training, capsys):
    """Issue 46: progress went [n/14] → 22 → 25 with no word of why; each round now opens with
    "round k of ≤ K: n more runs for ARMS (the audit now has N runs: ...)"."""
    plan = tiny_plan(write_audit)
    run_until_settled(plan, SettleOptions(max_seeds=4), live=False)
    said = " ".join(capsys.readouterr().err.split())  # rich wraps at the console's width
    rounds = read_rounds(plan.audit_dir)
    assert rounds, "the fixture's loop adds seeds"
    first = re.findall(r"round 1 of ≤ (\d+): the (\d+) planned runs", said)
    assert first == [(first[0][0], str(len(plan.runs)))]
    later = re.findall(r"round (\d+) of ≤ (\d+): (\d+) more runs for ([^(]+) \(the audit now "
                       r"has (\d+) runs", said)  # fmt: skip
    total = len(plan.runs)
    assert len(later) == len(rounds)
    for k, (r, (index, bound, n, arms, runs)) in enumerate(zip(rounds, later, strict=True), 2):
        total += len(r.added)
        assert (int(index), int(n), int(runs)) == (k, len(r.added), total)
        named = list(dict.fromkeys(a.arm for a in r.added))
        others = ", ".join(a for a in named if a != "baseline")
        base = "the baseline" if "baseline" in named else ""
        assert arms == (f"{others} and {base}" if others and base else others or base)
        assert k <= int(bound) == int(first[0][0])


def test_the_loop_settles_the_regressor_and_stops_the_null_arms(write_audit, fake_training):
    plan = tiny_plan(write_audit)
    settled = run_until_settled(plan, SettleOptions(max_seeds=4), live=False)
    # post_ln settled, the null arms stopped: the loop does not call that "settled"
    assert settled.stop == "all-stopped"
    (family,) = settled.families
    rows = {row.arm: row for row in family.arms}
    assert (rows["post_ln"].verdict, rows["post_ln"].stopped) == ("regressor", "settled")
    for arm in ("qk_norm", "geglu", "softpick"):
        assert rows[arm].verdict not in ("improver", "regressor")
        # an arm at its last seed stopped for that, not for futility
        expected = "max-seeds" if rows[arm].seeds == 4 else "futile"
        assert rows[arm].stopped == expected, (arm, rows[arm])
    assert sequential.describe_stop(settled).startswith("no arm is open any more (1 settled")
    rounds = read_rounds(plan.audit_dir)
    added = [a for r in rounds for a in r.added]
    assert len(rounds) + 1 == settled.rounds and len(plan.runs) + len(added) == settled.runs
    assert all(a.reason for a in added) and added[0].arm == "baseline"
    assert rows["post_ln"].seeds == rounds[-1].counts["post_ln/xs"]
    # every added seed is in the audit's notes
    notes = json.loads((plan.audit_dir / store.AUDIT_FILE).read_text())["notes"]
    assert sum(n["rule"] == "seed" for n in notes) == len(added)
    summary = loop_summary.read_summary(plan.audit_dir)
    assert summary["stop"] == "all-stopped" and summary["runs"] == settled.runs
    # no arm's last seed was spent when it could not settle it
    worthless = "P(settled by the next seed) = 0.00"
    assert not [a for a in added if worthless in a.reason and a.seed == 3]


def test_a_run_budget_stops_the_loop_and_says_so(write_audit, fake_training):
    plan = tiny_plan(write_audit)
    budget = len(plan.runs) + 2
    settled = run_until_settled(plan, SettleOptions(max_seeds=4, budget_runs=budget), live=False)
    assert settled.stop == "budget-runs" and settled.runs == budget
    stopped = {row.arm: row.stopped for row in settled.families[0].arms}
    assert "budget" in stopped.values()


def test_a_killed_coordinator_resumes_to_the_same_seeds_and_verdicts(
    write_audit, fake_training, monkeypatch, tmp_path
):
    reference = run_until_settled(tiny_plan(write_audit), SettleOptions(max_seeds=4), live=False)
    plan = make_plan(load_audit(write_audit("b.toml", arms=ARMS, seeds={"noise_floor": 3},
                                            runs_dir=str(tmp_path / "b"))))  # fmt: skip
    calls = iter([None, 2])  # the second round dies after two of its runs

    def dying(plan, **options):
        return fake_run_audit(plan, stop_after=next(calls, None))

    monkeypatch.setattr(sequential, "run_audit", dying)
    with pytest.raises(KeyboardInterrupt):
        run_until_settled(plan, SettleOptions(max_seeds=4), live=False)
    assert len(read_rounds(plan.audit_dir)) == 1
    resumed = run_until_settled(plan, SettleOptions(max_seeds=4), live=False)
    assert rounds_of(plan.audit_dir) == rounds_of(reference.audit.audit_dir)
    assert resumed.families == reference.families and resumed.runs == reference.runs


def test_two_coordinators_share_one_record(write_audit, fake_training):
    plan = tiny_plan(write_audit)
    first = run_until_settled(plan, SettleOptions(max_seeds=4), live=False)
    record = rounds_of(plan.audit_dir)
    second = run_until_settled(plan, SettleOptions(max_seeds=4), live=False)  # nothing to add
    assert rounds_of(plan.audit_dir) == record and second.families == first.families


# ---------------------------------------------------------------------------------------------
# the command line


def test_plan_until_settled_prints_both_designs(write_audit):
    path = write_audit(arms=ARMS)
    result = CliRunner().invoke(
        app, ["plan", str(path), "--no-probe", "--until-settled", "--effects", "3,8", "--json"]
    )
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.output)["sequential"]
    assert estimate["effects_from"] == "given"
    assert estimate["sequential"]["expected_runs"] < estimate["fixed"]["runs"]
    assert estimate["fixed"]["power"] >= estimate["sequential"]["power"]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--sigma", "-1"], "'--sigma': -1.0 is not a finite number > 0"),
        (["--max-seeds", "0"], "'--max-seeds': 0 is not a number in [1, 10000]"),
        (
            ["--effects", "3,3,3,3,3,3,3,3"],
            "--effects gives 8 effects, but a family of this audit has at most 4 arms",
        ),
        (["--effects", "3,nan"], "nan is not a finite number"),
    ],
)
def test_plan_refuses_options_out_of_their_meaning(write_audit, capsys, flags, said):
    """Issue 44: --sigma -1 printed "MDE 11.3 σ = -11.3", --max-seeds 0 was planned as ≤ 5 and
    extra --effects were ignored."""
    from archaudit.cli import main

    path = write_audit(arms=ARMS)
    argv = ["archaudit", "plan", str(path), "--no-probe", "--until-settled", *flags]
    with pytest.MonkeyPatch.context() as patch, pytest.raises(SystemExit) as stop:
        patch.setattr("sys.argv", argv)
        main()
    err = capsys.readouterr().err
    assert stop.value.code == 2 and said in err and len(err.strip().splitlines()) == 1, err


def test_a_loop_settled_by_its_first_round_still_writes_its_summary(write_audit, fake_training):
    # max one seed per arm: nothing can be added, so no round record (and no folder) exists
    plan = tiny_plan(write_audit)
    settled = run_until_settled(plan, SettleOptions(max_seeds=1), live=False)
    assert settled.rounds == 1 and not read_rounds(plan.audit_dir)
    summary = loop_summary.read_summary(plan.audit_dir)
    assert summary["runs"] == len(plan.runs) and summary["rule"]["max_seeds"] == 1


@pytest.mark.parametrize("change", ["drop", "add"])
def test_arms_can_be_dropped_or_added_after_rounds_exist(write_audit, fake_training, change):
    """Issue 22: dropping an arm after a sequential run crashed with KeyError 'softpick/xs' in
    `extend_plan`. The dropped arm's runs stay on disk, out of the verdicts; an added arm joins
    the loop at its first look."""
    plan = tiny_plan(write_audit)
    first = run_until_settled(plan, SettleOptions(max_seeds=4), live=False)
    assert any(a.arm == "softpick" for r in read_rounds(plan.audit_dir) for a in r.added)
    arms = [a for a in ARMS if a != "softpick"] if change == "drop" else [*ARMS, "gqa"]
    spec = load_audit(write_audit(arms=arms, seeds={"noise_floor": 3, "arms": 1}))
    changed = make_plan(spec)
    assert changed.audit_dir == plan.audit_dir
    again = run_until_settled(changed, SettleOptions(max_seeds=4), live=False)
    judged = {row.arm for row in again.families[0].arms}
    assert judged == set(arms)
    kept = {row.arm: row for row in again.families[0].arms}
    for row in first.families[0].arms:
        if row.arm in kept and change == "drop":
            assert kept[row.arm].verdict == row.verdict
    assert (plan.audit_dir / "softpick" / "xs" / "seed-0" / store.DONE).is_file()


def test_a_last_seed_that_cannot_settle_its_arm_is_not_scheduled():
    """Issue 22: the loop spent a seed on post_ln for "downstream_avg still open ... P(settled
    by the next seed) = 0.00". A last seed worth nothing is not run (the arm stops as futile);
    an earlier one is left to the futility rule, which looks ahead to the last seed."""
    from archaudit.stats.simulation.sequential import LoopState, SequentialRule, arm_tests

    rule = SequentialRule(max_seeds=3, baseline_seeds=3)
    tests = arm_tests(np.array([[0.0, 1.0, -1.0]]), np.array([[[0.1, np.nan], [0.2, 0.3]]]))
    family = sequential.Family("baseline", "xs", "val_loss", ("a", "b"))
    state = sequential.FamilyState(
        family,
        np.array([LoopState.OPEN, LoopState.OPEN]),
        np.zeros(2, bool),
        tests,
        np.array([0.0, 0.0]),
    )
    counts = {"baseline/xs": 3, "a/xs": 1, "b/xs": 2}
    added = sequential.next_seeds([state], counts, rule)
    assert [a.arm for a in added] == ["a"]  # b's next seed would be its last (baseline: at cap)


def test_each_arms_interval_is_the_dual_of_the_loops_last_test(
    write_audit, fake_training, monkeypatch
):
    """Issue 22: the forest plot's interval of a sequential arm is Welch's interval of its own
    seeds (scipy's, independently) at its last look's threshold, so it excludes 0 exactly when
    the loop's test crosses — not a pooled-σ interval that ignores unequal seed variances."""
    from scipy import stats

    from archaudit.stats.judging.loop import LoopArm

    monkeypatch.setitem(SPREAD, "geglu", 6.0)
    monkeypatch.setitem(EFFECT, "geglu", -0.08)  # better, but with six times the spread
    monkeypatch.setitem(EFFECT, "qk_norm", -0.03)
    plan = tiny_plan(write_audit)
    run_until_settled(plan, SettleOptions(max_seeds=4), live=False)
    summary = loop_summary.read_loop_summary(plan.audit_dir)
    assert summary is not None
    (family,) = summary.families
    base = [fake_value("baseline", s) for s in range(family.baseline_seeds)]
    crossed = []
    for row in family.arms:
        assert isinstance(row, LoopArm)
        seeds = [fake_value(row.arm, s) for s in range(row.seeds)]
        welch = stats.ttest_ind(base, seeds, equal_var=False)  # Δ = baseline − arm: loss
        assert row.seeds >= 2 and welch.df == pytest.approx(row.df, rel=1e-9)
        assert welch.pvalue == pytest.approx(row.p, rel=1e-9)
        expected = welch.confidence_interval(confidence_level=1 - row.threshold)
        low, high = row.interval()
        assert (low, high) == pytest.approx((expected.low, expected.high), rel=1e-9)
        assert (low > 0 or high < 0) == (row.p <= row.threshold)
        if row.stopped == "settled":
            assert low > 0 or high < 0, row
        crossed.append(row.p <= row.threshold)
    assert any(crossed) and not all(crossed)
    dfs = sorted(row.df for row in family.arms)
    assert dfs[0] < family.sigma_dof - 1  # the wide arm's Welch df is not the pooled σ's


def test_a_round_reads_back_as_the_records_it_was_written_from(tmp_path):
    """The round file keeps its JSON layout ({arm, scale, seed, reason} per added run), so an
    audit started before the records were typed resumes."""
    written = Round(2, {"a/s": 3, "baseline/s": 4}, (AddedSeed("a", "s", 2, "still open"),))
    publish_round(tmp_path, Round(1, {"a/s": 2}, ()))
    publish_round(tmp_path, written)
    on_disk = json.loads((tmp_path / sequential.RECORD_DIR / "round-2.json").read_text())
    assert on_disk == {
        "round": 2,
        "counts": {"a/s": 3, "baseline/s": 4},
        "added": [{"arm": "a", "scale": "s", "seed": 2, "reason": "still open"}],
    }
    assert read_rounds(tmp_path)[1] == written == Round.from_json(written.to_json())


@pytest.fixture
def loop_above_alpha(monkeypatch):
    """The sequential design's measured rate above α (the panel's worst at 0.083, as a 1-arm
    loop measured before its level was calibrated), for every caller of the rate."""
    from archaudit.stats.simulation import sequential as simulation
    from archaudit.stats.simulation.simulate import panel_rate

    real = simulation.sequential_design_rate

    def above(arms, rule, audits=2000):
        worst = panel_rate(0.083, 4000, rule.alpha, "hetero:6")
        return dataclasses.replace(real(arms, rule, audits), panel_worst=worst)

    judge_module = importlib.import_module("archaudit.stats.judging.judgement")
    for module in (sequential, judge_module, simulation):
        monkeypatch.setattr(module, "sequential_design_rate", above)


def test_a_one_arm_loop_above_alpha_prints_no_improver_or_regressor_anywhere(
    write_audit, fake_training, loop_above_alpha, tmp_path
):
    """Issue 41, must-show 2: post_ln settles as a regressor by the loop's own boundaries, but
    under a design whose rate is above α no command prints it as one."""
    spec = load_audit(write_audit(arms=["post_ln"], seeds={"noise_floor": 3, "arms": 1}))
    plan = make_plan(spec)
    settled = run_until_settled(plan, SettleOptions(max_seeds=4), live=False)
    (family,) = settled.families
    (row,) = family.arms
    assert (row.verdict, row.stopped) == ("nominal-regressor", "settled")
    assert family.demoted == ("post_ln",)
    register_commands()
    printed = CliRunner().invoke(app, ["stats", str(plan.audit_dir), "--metric", "val_loss"])
    assert printed.exit_code == 0, printed.output
    assert "ABOVE α" in printed.output and "nominal-regressor" in printed.output
    assert " regressor " not in printed.output.replace("nominal-regressor", "")
    assert "reported as nominal: post_ln" in " ".join(printed.output.split())
    document = CliRunner().invoke(
        app, ["stats", str(plan.audit_dir), "--metric", "val_loss", "--json"]
    )
    verdicts = {a["arm"]: a["verdict"] for a in json.loads(document.stdout)["arms"]}
    assert verdicts["post_ln"] == "nominal-regressor"


# ---------------------------------------------------------------------------------------------
# the loop's calibrated level (issue 41.1): one arm, where spending α itself is above α (about
# 0.08 under the panel's hetero:6), never prints improver/regressor under an "ABOVE α" header

SIGNIFICANT = ("improver", "regressor")


@pytest.fixture
def uncalibrated(monkeypatch):
    """The loop spends α itself, and its design rate is simulated afresh (not from the cache)."""
    monkeypatch.setattr(loop_sim, "loop_level", lambda arms, rule, profile=None: rule.alpha)
    monkeypatch.setattr(loop_sim, "SEQUENTIAL_RATE_VERSION", "uncalibrated-fixture")
    loop_sim.sequential_design_rate.cache_clear()
    yield
    loop_sim.sequential_design_rate.cache_clear()


def settled_output(write_audit, monkeypatch) -> str:
    monkeypatch.setattr(sequential, "run_audit", fake_run_audit)
    monkeypatch.setitem(EFFECT, "post_ln", 0.5)  # 50σ worse: any level calls it a regressor
    seeds = {"noise_floor": 3, "arms": 1, "max": 5, "policy": "sequential"}
    path = write_audit(arms=["post_ln"], seeds=seeds)
    result = CliRunner().invoke(app, ["run", str(path)], terminal_width=400)
    assert result.exit_code == 0, result.output
    return result.output


def verdict_words(output: str) -> set[str]:
    rows = [line for line in output.splitlines() if "post_ln" in line]
    return {word.strip("│ ") for row in rows for word in row.split("│")}


def test_a_one_arm_loop_above_alpha_prints_no_regressor(write_audit, monkeypatch, uncalibrated):
    output = settled_output(write_audit, monkeypatch)
    assert "ABOVE α" in output
    words = verdict_words(output)
    assert "nominal-regressor" in words and not words & set(SIGNIFICANT)


def test_a_one_arm_loop_at_its_calibrated_level_holds_alpha(write_audit, monkeypatch):
    output = settled_output(write_audit, monkeypatch)
    assert "ABOVE α" not in output and "calibrated level" in output
    assert "regressor" in verdict_words(output)


def test_the_calibrated_level_holds_the_one_arm_loop_over_the_panel():
    rule = loop_sim.SequentialRule(max_seeds=5, calibrated=True)
    level = loop_sim.loop_level(1, rule)
    assert 0.0 < level < rule.alpha  # spending α itself is above α here
    design = loop_sim.sequential_design_rate(1, rule)
    assert design.panel_worst is not None and not design.above_alpha
    assert design.audits >= loop_sim.LOOP_CALIBRATION_AUDITS


def limit_lines_of(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("limits of ")]


def test_runs_end_tables_carry_each_verdicts_limits_in_stats_words(write_audit, monkeypatch):
    """Issue 46 item 2: the table `run --until-settled` ends with names what limits each verdict
    (one scale: R7 for post_ln, R6 for softpick judged by a loss), as `stats` does, word for
    word."""
    monkeypatch.setattr(sequential, "run_audit", fake_run_audit)
    seeds = {"noise_floor": 3, "arms": 1, "max": 4, "policy": "sequential"}
    path = write_audit(arms=ARMS, seeds=seeds)
    ran = CliRunner().invoke(app, ["run", str(path)], terminal_width=400)
    assert ran.exit_code == 0, ran.output
    register_commands()
    audit_dir = make_plan(load_audit(path)).audit_dir
    stats = CliRunner().invoke(app, ["stats", str(audit_dir)], terminal_width=400)
    assert stats.exit_code == 0, stats.output
    limits = limit_lines_of(ran.output)
    assert {line.split(":")[0] for line in limits} >= {"limits of post_ln", "limits of softpick"}
    said = " ".join(stats.output.split())  # stats wraps its notes at the console's width
    assert said.count("limits of ") == len(limits)
    assert all(line in said for line in limits), (limits, said)


@pytest.mark.parametrize("correction", ["bh", "none"])
def test_bh_and_none_on_a_sequential_folder_declare_nothing(write_audit, monkeypatch, correction):
    """Issue 53, must-show 3: the loop settles post_ln as a regressor (50σ worse), but `stats`
    under an uncalibrated correction prints it as nominal, with the note that says why, in the
    console and the JSON."""
    settled = settled_output(write_audit, monkeypatch)
    assert "regressor" in verdict_words(settled)  # the loop (Holm) declares it
    seeds = {"noise_floor": 3, "arms": 1, "max": 5, "policy": "sequential"}
    audit_dir = make_plan(load_audit(write_audit(arms=["post_ln"], seeds=seeds))).audit_dir
    command = ["stats", str(audit_dir), "--metric", "val_loss", "--correction", correction]
    printed = CliRunner().invoke(app, command, terminal_width=400)
    assert printed.exit_code == 0, printed.output
    rows = [line for line in printed.output.splitlines() if line.lstrip().startswith("post_ln")]
    words = {word for row in rows for word in row.split()}
    assert "nominal-regressor" in words and not words & set(SIGNIFICANT)
    assert f"--correction {correction} is not calibrated" in " ".join(printed.output.split())
    document = CliRunner().invoke(app, [*command, "--json"])
    verdicts = {a["arm"]: a["verdict"] for a in json.loads(document.stdout)["arms"]}
    assert verdicts["post_ln"] == "nominal-regressor"


def test_a_round_line_gives_the_baseline_no_verdict():
    """Issue 57: the round line said the baseline's "verdicts are still open"; a baseline has
    no verdict: its seed is named apart, for the arms' noise floor."""
    from archaudit.audit.execute.sequential import round_line

    def line(*arms: str) -> str:
        added = tuple(AddedSeed(arm, "s", 2, "why") for arm in arms)
        rounds = [Round(1, {}, ()), Round(2, {}, added)]
        return round_line(rounds, {"a/s": 2}, 4, 6, 9, baselines={"baseline"})

    assert line("baseline", "a", "b") == (
        "round 3 of ≤ 3: 3 more runs for a, b and the baseline (the audit now has 9 runs: the "
        "arms' verdicts are still open; a baseline seed narrows the open arms' noise floor)"
    )
    assert line("a").endswith("for a (the audit now has 9 runs: the arms' verdicts are still open)")
    assert "verdicts" not in line("baseline") and "for the baseline (" in line("baseline")
