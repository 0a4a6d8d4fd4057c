"""`plan`'s cost estimate: its probe times the trainer's own step (compiled,
activation-checkpointed and clipped as the recipe says) and a run's other parts, caches them per
machine and shape, and its summary is a typed record that round-trips through JSON."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch import nn

from archaudit.audit.grid.plan import make_plan
from archaudit.audit.launcher.executors import cpu_cores
from archaudit.audit.planning import estimate, probe
from archaudit.audit.planning.estimate import (
    FixedCost,
    PlanSummary,
    SequentialCost,
    SequentialEstimate,
    plan_summary,
    run_time,
)
from archaudit.audit.planning.probe import (
    PROBE_STEPS,
    WARMUP_STEPS,
    LoopCost,
    Neighbours,
    ShapeCost,
    Timed,
    measure_shape,
)
from archaudit.audit.setup.spec import load_audit
from archaudit.config import ModelConfig, Recipe
from archaudit.train import distributed, train
from archaudit.train import step as training_step

STEP_RECIPE = {"compile": True, "activation_checkpointing": True, "grad_clip": 0.125}
ACCUMULATION = 2


class Compiled(nn.Module):
    """What the spied `torch.compile` returns: the module, counting the forward passes that
    run through it."""

    def __init__(self, module: nn.Module, calls: Counter) -> None:
        super().__init__()
        self.module, self.calls = module, calls

    def forward(self, *args, **kwargs):
        self.calls["compiled forward"] += 1
        return self.module(*args, **kwargs)


LOOP = LoopCost(
    run=Timed(wall=0.5, cpu=0.25), round=Timed(wall=2.0, cpu=1.0), finish=Timed(wall=6.0, cpu=3.0)
)


@pytest.fixture(autouse=True)
def _loop_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop probe runs a tiny audit (seconds): every plan here reads `LOOP` instead, but
    the tests of the probe itself."""
    monkeypatch.setattr(estimate, "loop_cost", lambda *args, **kwargs: LOOP)


@pytest.fixture
def spied_step(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Count what the training step does: compile, forward passes through the compiled
    module, recomputed (checkpointed) sublayers, clipping at the recipe's norm, steps."""
    calls: Counter = Counter()
    real_clip, real_recompute = nn.utils.clip_grad_norm_, distributed.checkpoint
    real_step = training_step.train_step

    def compile_(module: nn.Module, **kwargs) -> nn.Module:
        calls["compile"] += 1
        return Compiled(module, calls)

    def clip(parameters, max_norm, *args, **kwargs):
        calls[f"clip at {max_norm}"] += 1
        return real_clip(parameters, max_norm, *args, **kwargs)

    def recompute(*args, **kwargs):
        calls["recomputed sublayer"] += 1
        return real_recompute(*args, **kwargs)

    def step(*args, **kwargs):
        calls["train_step"] += 1
        return real_step(*args, **kwargs)

    monkeypatch.setattr(torch, "compile", compile_)
    monkeypatch.setattr(nn.utils, "clip_grad_norm_", clip)
    monkeypatch.setattr(distributed, "checkpoint", recompute)
    monkeypatch.setattr(training_step, "train_step", step)
    return calls


def expected_calls(steps: int, layers: int, validation_batches: int = 0) -> Counter:
    """One compile; per step one `train_step`: `ACCUMULATION` forward passes through the
    compiled module, each with the layers' two sublayers checkpointed, and one clip at the
    recipe's norm. Validation runs the plain module, its sublayers checkpointed too."""
    forwards = steps * ACCUMULATION
    return Counter(
        {
            "compile": 1,
            "train_step": steps,
            "compiled forward": forwards,
            "recomputed sublayer": (forwards + validation_batches) * 2 * layers,
            f"clip at {STEP_RECIPE['grad_clip']}": steps,
        }
    )


def test_the_probe_times_the_compiled_checkpointed_clipped_training_step(
    write_audit, spied_step: Counter
):
    path = write_audit(recipe={"grad_accumulation": ACCUMULATION, **STEP_RECIPE})
    run = make_plan(load_audit(path)).runs[0]
    model = dataclasses.replace(run.model, vocab_size=64)
    cost = measure_shape(model, run, 1, Neighbours(0))
    assert cost.step.wall > 0 and cost.val_batch.wall > 0 and cost.save.wall > 0
    assert cost.suite == probe.ZERO  # the audit has no suite
    steps = WARMUP_STEPS + PROBE_STEPS
    assert spied_step == expected_calls(steps, model.n_layers, validation_batches=1)


def test_training_runs_the_same_step_the_probe_times(tmp_path: Path, spied_step: Counter):
    """The same spies see the same step in `train`: the function the probe calls, compiled,
    checkpointed and clipped the same way."""
    model = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=32)
    recipe = Recipe(
        steps=2, batch_tokens=256, grad_accumulation=ACCUMULATION, corpus_chars=60_000,
        eval_every=100, checkpoint_every=100, threads=1, **STEP_RECIPE,
    )  # fmt: skip
    train(model, recipe, tmp_path / "run")  # validation at the last step
    # validation's batches, and the stability signals' one held-out batch (recipe.log_signals)
    batches = recipe.eval_batches + int(recipe.log_signals)
    assert spied_step == expected_calls(recipe.steps, model.n_layers, batches)


def test_the_probe_uses_no_step_of_its_own(monkeypatch: pytest.MonkeyPatch, write_audit):
    """Without the shared step the probe cannot time anything: it has no copy to fall back on."""

    def refuse(*args, **kwargs):
        raise AssertionError("the probe must build the trainer's step")

    monkeypatch.setattr(training_step, "build_training", refuse)
    run = make_plan(load_audit(write_audit())).runs[0]
    with pytest.raises(AssertionError, match="trainer's step"):
        measure_shape(dataclasses.replace(run.model, vocab_size=64), run, 1, Neighbours(0))


def test_the_plan_summary_round_trips_through_json(write_audit):
    plan = make_plan(load_audit(write_audit(arms=["qk_norm", "switch_moe"])))
    summary = plan_summary(plan, probe=False)
    sequential = SequentialEstimate(
        metric="val_loss",
        effects_from="given",
        max_seeds=5,
        audits=1000,
        sequential=SequentialCost(
            expected_runs=14.9,
            power=0.95,
            expected_rounds=4.2,
            wall_s=60.0,
            runs_range=(12.0, 18.0),
            wall_range_s=(48.0, 72.0),
        ),
        fixed=FixedCost(seeds_per_arm=5, runs=20, power=0.95, wall_s=None),
    )
    probed = dataclasses.replace(summary, sequential=sequential, speed_range=(0.9, 1.2))
    for record in (summary, probed):
        document = json.loads(json.dumps(record.to_json()))
        assert PlanSummary.from_json(document) == record
    assert summary.total_runs == len(plan.runs) and summary.estimated_wall_s is None
    assert [costed.run for costed in summary.runs] == list(plan.runs)
    assert {n.rule for n in summary.notes} == {n.rule for n in plan.notes}


PART = Timed(wall=1.0, cpu=0.5)
SHAPE = ShapeCost(step=PART, warmup=PART * 3, val_batch=PART, save=PART * 2, suite=PART * 5)


def test_a_run_costs_start_up_warm_up_steps_validations_saves_and_its_suite(write_audit):
    run = make_plan(load_audit(write_audit())).runs[0]
    recipe = run.recipe  # steps 12, validation every 6 (2 batches), a checkpoint every 3
    assert (recipe.steps, recipe.eval_every, recipe.eval_batches) == (12, 6, 2)
    assert recipe.checkpoint_every == 3
    start = Timed(wall=4.0, cpu=3.0)
    parts = 4 + 3 + 4 * 2 + (12 + 2 * 2 + 5) * 2.0  # compute scaled by the FLOPs ratio 2
    assert run_time(run, SHAPE, start, ratio=2.0) == Timed(parts, (parts - 4) / 2 + 3)


def test_the_summary_wall_time_is_the_audit_start_and_the_runs_seconds_over_the_workers(
    monkeypatch: pytest.MonkeyPatch, write_audit
):
    monkeypatch.setattr(estimate, "shape_cost", lambda *args, **kwargs: SHAPE)
    monkeypatch.setattr(estimate, "step_cost", lambda *args, **kwargs: PART * 2)
    monkeypatch.setattr(estimate, "startup", lambda *args, **kwargs: PART)
    monkeypatch.setattr(estimate, "audit_start", lambda *args, **kwargs: SHAPE.suite)
    summary = plan_summary(make_plan(load_audit(write_audit(arms=["switch_moe"]))))
    seconds = [costed.cost.seconds for costed in summary.runs]
    assert all(s is not None and s > 0 for s in seconds)
    assert summary.audit_start_s == SHAPE.suite.wall
    assert summary.audit_start_cpu_s == SHAPE.suite.cpu  # stress --plan adds it to its CPU
    runs = sum(seconds) + len(seconds) * LOOP.run.wall  # each run and the coordinator's work
    wall = SHAPE.suite.wall + runs / summary.workers + LOOP.finish.wall  # judged once, at the end
    assert summary.estimated_wall_s == pytest.approx(wall)
    assert (summary.run_overhead_s, summary.round_overhead_s) == (LOOP.run.wall, LOOP.round.wall)
    assert summary.finish_s == LOOP.finish.wall
    assert summary.mean_run_seconds == pytest.approx(sum(seconds) / len(seconds))
    cpu = [costed.cost.cpu_seconds for costed in summary.runs]
    assert summary.estimated_cpu_s == pytest.approx(sum(cpu))


def test_an_arm_costs_its_own_measured_step_not_its_flops(
    monkeypatch: pytest.MonkeyPatch, write_audit
):
    """An arm's compute is scaled by its own step over the probed baseline's: softpick has the
    baseline's FLOPs but not its speed. The baseline itself is not timed twice."""
    timed_arms: list[str] = []

    def arm_step(model, run, threads, neighbours, measure=True, label=""):
        timed_arms.append(run.arm)
        return PART * 3  # three times the probed step

    monkeypatch.setattr(estimate, "shape_cost", lambda *args, **kwargs: SHAPE)
    monkeypatch.setattr(estimate, "step_cost", arm_step)
    monkeypatch.setattr(estimate, "startup", lambda *args, **kwargs: PART)
    plan = make_plan(load_audit(write_audit(arms=["softpick"])))
    costs = estimate.estimate(plan)
    by_arm = {run.arm: costs[run.path] for run in plan.runs}
    assert set(timed_arms) == {"softpick"}
    base, arm = by_arm["baseline"], by_arm["softpick"]
    assert base.flops_per_token == arm.flops_per_token
    assert arm.train_seconds == pytest.approx(3 * base.train_seconds)
    run = next(r for r in plan.runs if r.arm == "softpick")
    assert arm.seconds == pytest.approx(run_time(run, SHAPE, PART, ratio=3.0).wall)


def test_an_arms_cpu_scales_by_its_cpu_ratio_not_its_wall_ratio(
    monkeypatch: pytest.MonkeyPatch, write_audit
):
    """Issue 54: two probes minutes apart on a shared machine differ in wall time by the load
    (hybrid_norm's step read 2.45x the baseline's in wall time, 1.40x in CPU): the CPU estimate
    scales the arm's compute by the CPU ratio, the wall estimate by the wall ratio."""
    monkeypatch.setattr(estimate, "shape_cost", lambda *args, **kwargs: SHAPE)
    monkeypatch.setattr(estimate, "step_cost", lambda *a, **k: Timed(PART.wall * 4, PART.cpu * 1.5))
    monkeypatch.setattr(estimate, "startup", lambda *args, **kwargs: PART)
    plan = make_plan(load_audit(write_audit(arms=["softpick"])))
    costs = estimate.estimate(plan)
    run = next(r for r in plan.runs if r.arm == "softpick")
    expected = run_time(run, SHAPE, PART, ratio=4.0, cpu_ratio=1.5)
    assert costs[run.path].seconds == pytest.approx(expected.wall)
    assert costs[run.path].cpu_seconds == pytest.approx(expected.cpu)
    assert expected.cpu < run_time(run, SHAPE, PART, ratio=4.0).cpu  # the wall ratio's


def test_the_probe_steps_beside_as_many_runs_as_the_pool_runs_beside_each(write_audit):
    """Runs of a local pool share the CPU's caches and memory bandwidth: each shape is timed
    while `beside` neighbour processes step it too, and they end with the estimate."""
    from archaudit.audit.launcher.executors import make_executor

    plan = make_plan(load_audit(write_audit(executor={"workers": 2, "threads": 1})))
    assert make_executor(plan.spec.executor, plan.audit_dir).beside == min(2, cpu_cores()) - 1
    run = plan.runs[0]
    with Neighbours(1) as neighbours:
        _, (steady, _), _ = probe.measure_steps(
            dataclasses.replace(run.model, vocab_size=64), run, 1, neighbours
        )
        (proc,) = neighbours.procs
        assert proc.poll() is None and steady.wall > 0  # it steps while the probe measures
    assert proc.returncode == 0 and not neighbours.procs


@pytest.mark.parametrize(
    ("runs", "rounds", "workers", "waves"),
    [(8, 1, 2, 4), (9, 1, 2, 5), (24, 3, 2, 12), (23, 3, 2, 12), (4, 4, 2, 4), (6, 1, 8, 1)],
)
def test_each_round_ends_with_its_last_wave_of_runs(runs, rounds, workers, waves):
    """A round's runs go out `workers` at a time and the next round waits for its last: 23
    runs in 3 rounds on 2 workers take 12 run-lengths, not 11.5."""
    assert estimate._wall_s(runs, rounds, estimate.Pace(10.0, workers, 0.0)) == pytest.approx(
        waves * 10.0
    )


def test_the_audit_start_is_paid_once_at_the_machine_speed():
    """Rounds and waves add runs' lengths; the audit's own start comes once, and a slower
    machine slows it as much as the runs."""
    pace, speed = estimate.Pace(10.0, 2, 7.0), 1.5
    waves = estimate._wall_s(9, 3, estimate.Pace(10.0, 2, 0.0))
    assert waves is not None
    assert estimate._wall_s(9, 3, pace, speed) == pytest.approx((7.0 + waves) * speed)


def test_each_wave_pays_the_coordinators_work_each_round_its_judgement_and_the_audit_its_end():
    """The loop's fixed costs (`probe.loop_cost`): a run's dispatch and record rides with each
    wave of runs, a judgement comes between two rounds, and the finish (the last judgement,
    the tables, the report: 81 s of a 496 s audit at a load of 20, where a judgement between
    rounds took 4 s) once after the last run."""
    bare = estimate._wall_s(9, 3, estimate.Pace(10.0, 2, 0.0))
    run, judged, finish = LOOP.run.wall, LOOP.round.wall, LOOP.finish.wall
    loop = estimate._wall_s(9, 3, estimate.Pace(10.0, 2, 0.0, run, judged, finish))
    assert bare is not None and loop is not None
    assert loop == pytest.approx(bare * (10.0 + run) / 10.0 + 2 * judged + finish)


def test_the_loop_costs_come_from_a_sequential_audits_timeline(tmp_path: Path):
    """Gaps between runs of one round are the coordinator's work per run; the gap between
    rounds, beyond that, a judgement; the last run's end to the command's, the finish."""
    from archaudit.audit.execute.sequential import AddedSeed, Round, publish_round

    spans = {
        ("baseline", 0): (0.0, 1.0, 1),
        ("baseline", 1): (1.5, 2.5, 1),
        ("relu2", 0): (3.0, 4.0, 1),
        ("relu2", 1): (6.5, 7.5, 2),
    }
    for (arm, seed), (started, finished, _) in spans.items():
        run_dir = tmp_path / arm / "xs" / f"seed-{seed}"
        run_dir.mkdir(parents=True)
        (run_dir / "attempts.jsonl").write_text(json.dumps({"started": started}) + "\n")
        (run_dir / "DONE").write_text(json.dumps({"finished": finished}))
    publish_round(tmp_path, Round(1, {}, (AddedSeed("relu2", "xs", 1, "open"),)))
    ended = 9.5
    ordered = sorted(spans.values())
    within = [b[0] - a[1] for a, b in itertools.pairwise(ordered) if a[2] == b[2]]
    run = sum(within) / len(within)
    (between,) = [b[0] - a[1] - run for a, b in itertools.pairwise(ordered) if a[2] != b[2]]
    gaps = probe.loop_gaps(tmp_path, ended)
    assert (gaps.run, gaps.round, gaps.finish) == pytest.approx((run, between, ended - 7.5))


def test_the_loop_probe_times_the_run_commands_end_apart_from_its_judgements(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """The loop probe plans its tiny audit (the loop's levels cached, as for an audit planned
    before it runs), runs it with `archaudit run` and reads the last run's end to the command's
    exit as the finish (the last judgement, the tables, the report), apart from the judgement
    between rounds: at a load of 20 a 2-arm audit's judgements took 4 s each and its finish
    81 s, and counting their mean every round missed both."""
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path / "cache"))
    commands: list[list[str]] = []
    real_run = probe.subprocess.run

    def spied(argv, *args, **kwargs):
        commands.append(list(argv))
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(probe.subprocess, "run", spied)
    measured = probe._loop_probe("cpu", 1, probe.ZERO)
    assert [argv[3] for argv in commands] == ["plan", "run"]  # python -m archaudit.cli ...
    assert set(measured) == {"run", "round", "finish"}
    assert measured["finish"]["wall"] > 0
    assert all(part["wall"] >= 0 for part in measured.values())


def steady_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference step takes the same time now as beside every measurement (a probe's
    entry is read back scaled by now over then: here by exactly 1)."""
    steady = probe.Timed(0.1, 0.1)
    monkeypatch.setattr(probe, "reference_step", lambda: steady)
    monkeypatch.setattr(probe, "breath_reference", lambda: steady)


def test_the_loop_probe_is_measured_once_and_read_at_the_machines_speed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(probe, "startup", lambda *args, **kwargs: PART)
    steady_machine(monkeypatch)
    measured = {
        name: dataclasses.asdict(getattr(LOOP, name)) for name in ("run", "round", "finish")
    }
    monkeypatch.setattr(probe, "_loop_probe", lambda *args: measured)
    assert probe.loop_cost("cpu", 1, warm=True) == LOOP
    monkeypatch.setattr(probe, "_loop_probe", lambda *args: pytest.fail("measured again"))
    then = probe.reference_step()
    monkeypatch.setattr(probe, "reference_step", lambda: then * 1.5)  # a slower machine now
    cost = probe.loop_cost("cpu", 1, warm=True)
    assert cost is not None
    assert cost.run.wall == pytest.approx(LOOP.run.wall * 1.5)
    assert cost.round.wall == pytest.approx(LOOP.round.wall * 1.5)
    assert cost.finish.wall == pytest.approx(LOOP.finish.wall * 1.5)


def test_a_second_plan_measures_nothing(monkeypatch: pytest.MonkeyPatch, write_audit, tmp_path):
    """The probes are cached per machine and shape: the second plan reads them back."""
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path / "cache"))
    steady_machine(monkeypatch)
    one = {"executor": {"workers": 1}}  # no neighbour: test_the_probe_steps_beside… has one
    plan = make_plan(load_audit(write_audit(**one)))
    first = plan_summary(plan, probe_budget=1e9)  # everything, however loaded the machine
    monkeypatch.setattr(probe, "measure_shape", lambda *a: pytest.fail("measured again"))
    monkeypatch.setattr(probe, "measure_steps", lambda *a: pytest.fail("measured again"))
    monkeypatch.setattr(probe.subprocess, "run", lambda *a, **k: pytest.fail("started again"))
    assert plan_summary(plan, probe_budget=1e9) == first
    assert dataclasses.replace(plan_summary(plan), probe_budget_s=1e9) == first  # reads back
    changed = make_plan(load_audit(write_audit(recipe={"lr": 1e-3, "steps": 20}, **one)))
    assert plan_summary(changed).estimated_wall_s is not None  # LR and steps: same shape
    wider = make_plan(load_audit(write_audit(recipe={"batch_tokens": 1024}, **one)))
    with pytest.raises(pytest.fail.Exception, match="measured again"):
        plan_summary(wider, probe_budget=1e9)  # the budget's estimate reads the real machine
    assert estimate.estimate(wider, measure=False)[wider.runs[0].path].seconds is None


@pytest.mark.slow
def test_with_torch_compile_the_timed_steps_compile_nothing(
    monkeypatch: pytest.MonkeyPatch, write_audit
):
    """Real torch.compile (inductor on this CPU): the warm-up takes the compile and the one
    recompile of the second call, so the timed steps are steady ones. With one warm-up step
    the first timed step recompiled (0.8 s against a steady 0.003 s at this size)."""
    from torch._dynamo.utils import counters

    compiled_at: list[int] = []
    real_step = training_step.train_step

    def step(*args, **kwargs):
        before = counters["frames"]["ok"]
        out = real_step(*args, **kwargs)
        compiled_at.append(counters["frames"]["ok"] - before)
        return out

    monkeypatch.setattr(training_step, "train_step", step)
    run = make_plan(load_audit(write_audit(recipe={"compile": True}))).runs[0]
    measure_shape(dataclasses.replace(run.model, vocab_size=64), run, 1, Neighbours(0))
    assert len(compiled_at) == WARMUP_STEPS + PROBE_STEPS and compiled_at[0] > 0
    assert compiled_at[WARMUP_STEPS:] == [0] * PROBE_STEPS, compiled_at


def test_status_says_how_long_is_left_from_the_plans_model(
    monkeypatch: pytest.MonkeyPatch, write_audit
):
    from archaudit.audit.grid import store

    monkeypatch.setattr(estimate, "shape_cost", lambda *args, **kwargs: SHAPE)
    monkeypatch.setattr(estimate, "step_cost", lambda *args, **kwargs: PART)
    monkeypatch.setattr(estimate, "startup", lambda *args, **kwargs: PART)
    monkeypatch.setattr(estimate, "audit_start", lambda *args, **kwargs: SHAPE.suite)
    plan = make_plan(load_audit(write_audit()))
    summary = plan_summary(plan)
    store.materialize(plan)
    statuses = store.refresh_export(plan.audit_dir)
    left = estimate.time_left(plan.audit_dir, statuses)
    assert summary.estimated_wall_s is not None  # the audit has started: its start is spent
    assert left == pytest.approx(summary.estimated_wall_s - SHAPE.suite.wall)
    halfway = [dataclasses.replace(s, step=s.spec.recipe.steps // 2) for s in statuses]
    fixed = len(statuses) * LOOP.run.wall / summary.workers + LOOP.finish.wall  # not trained
    assert estimate.time_left(plan.audit_dir, halfway) == pytest.approx((left - fixed) / 2 + fixed)


def test_status_counts_the_loops_rounds_and_its_end_as_plan_does(
    monkeypatch: pytest.MonkeyPatch, write_audit, tmp_path
):
    """Issue 57: `plan` said 18.9 min and `status` "about 3.3 min left" while 16 more minutes of
    later rounds ran. At a sequential audit's start, `status`'s time left is `plan
    --until-settled`'s wall less the audit's start (to the waves' rounding), and both count
    the same fixed costs: a judgement between two rounds (rounds - 1 of them) and the finish
    (the last judgement, the tables, the report) once."""
    from archaudit.audit.grid import store

    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(estimate, "shape_cost", lambda *args, **kwargs: SHAPE)
    monkeypatch.setattr(estimate, "step_cost", lambda *args, **kwargs: SHAPE.step)
    monkeypatch.setattr(estimate, "startup", lambda *args, **kwargs: PART)
    monkeypatch.setattr(estimate, "audit_start", lambda *args, **kwargs: SHAPE.suite)
    seeds = {"noise_floor": 3, "arms": 1, "policy": "sequential", "max": 3}
    plan = make_plan(load_audit(write_audit(seeds=seeds, executor={"workers": 1})))
    store.materialize(plan)

    def plan_and_status(loop: LoopCost) -> tuple[float, float, float, float]:
        monkeypatch.setattr(estimate, "loop_cost", lambda *args, **kwargs: loop)
        summary = plan_summary(plan)
        assert summary.mean_run_seconds and summary.audit_start_s
        fixed = (summary.run_overhead_s or 0.0, summary.round_overhead_s or 0.0)
        loop_estimate = estimate.sequential_estimate(
            plan,
            seconds_per_run=summary.mean_run_seconds,
            audit_start_s=summary.audit_start_s,
            loop=(*fixed, summary.finish_s or 0.0),
        ).sequential
        left = estimate.time_left(plan.audit_dir, store.refresh_export(plan.audit_dir))
        assert loop_estimate.wall_s is not None and left is not None
        planned = loop_estimate.wall_s - summary.audit_start_s
        return planned, left, loop_estimate.expected_rounds, summary.mean_run_seconds

    planned, left, rounds, per_run = plan_and_status(LOOP)
    assert rounds > 1
    assert left == pytest.approx(planned, abs=rounds * (per_run + LOOP.run.wall))
    judged = plan_and_status(dataclasses.replace(LOOP, round=LOOP.round + Timed(10.0, 0.0)))
    assert judged[0] - planned == pytest.approx(10.0 * (rounds - 1))
    assert judged[1] - left == pytest.approx(10.0 * (rounds - 1))
    ended = plan_and_status(dataclasses.replace(LOOP, finish=LOOP.finish + Timed(10.0, 0.0)))
    assert (ended[0] - planned, ended[1] - left) == pytest.approx((10.0, 10.0))


def test_the_probe_says_its_total_and_time_up_front_and_counts_toward_it(
    monkeypatch: pytest.MonkeyPatch, write_audit, tmp_path, capsys
):
    """Issue 46 item 4: "measuring N (arm, scale) pairs on this machine, about M min" before
    the first, then each pair's line counts toward N; a second plan measures nothing."""
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(estimate, "startup", lambda *args, **kwargs: PART)
    monkeypatch.setattr(probe, "measure_shape", lambda *args: SHAPE)
    monkeypatch.setattr(probe, "measure_steps", lambda *args: (None, (PART, PART), None))
    plan = make_plan(load_audit(write_audit(arms=["qk_norm", "softpick"])))
    pairs = estimate.pair_runs(plan)
    first = {run.scale: run for run in reversed(pairs)}
    expected = len(first) + sum(run.model != first[run.scale].model for run in pairs)
    plan_summary(plan, probe_budget=1e9)  # everything, however loaded the machine
    said = " ".join(capsys.readouterr().err.split())
    up_front = re.search(r"measuring (\d+) \(arm, scale\) pairs on this machine, about", said)
    assert up_front is not None and int(up_front.group(1)) == expected
    assert said.index(up_front.group(0)) < said.index(f"[1/{expected},")
    assert [int(k) for k in re.findall(rf"\[(\d+)/{expected}, about", said)] == list(
        range(1, expected + 1)
    )
    plan_summary(plan)
    assert "pairs" not in capsys.readouterr().err


def test_plans_power_lines_and_until_settled_give_the_loop_one_number(write_audit):
    """Issue 46 item 3: plain `plan` said "≤ 6 seeds … about 11 runs" and `plan
    --until-settled` "about 10 runs" for one audit; both are now the audit's own loop (its
    seeds.max), simulated on the same audits."""
    from archaudit.audit.planning.power_plan import plan_power

    plan = make_plan(load_audit(write_audit(arms=["qk_norm", "softpick"])))
    (family,) = plan_power(plan)
    loop = estimate.sequential_estimate(plan)
    assert family.loop_seeds == loop.max_seeds == plan.spec.seeds.max
    assert family.loop_runs == loop.sequential.expected_runs
    low, high = loop.sequential.runs_range
    assert low <= loop.sequential.expected_runs <= high


def test_with_no_effect_known_the_loop_is_simulated_from_null_up_to_its_mde(write_audit):
    """Issue 46 item 3: the loop's expected runs assumed every arm null, and the loops that
    ran (arms with effects) spent more; with nothing known each arm's effect now spreads from
    null to the loop's MDE, said in words, and its range covers the spread and the draws."""
    from archaudit.audit.execute.sequential import sequential_rule, settle_options
    from archaudit.stats.simulation.sequential import simulate_sequential

    plan = make_plan(load_audit(write_audit(arms=["qk_norm", "softpick"])))
    loop = estimate.sequential_estimate(plan)
    rule = sequential_rule(plan, settle_options(plan), len(plan.spec.primary_metrics))
    null = simulate_sequential(arms=2, rule=rule, audits=loop.audits)
    assert loop.effects_from == "prior" and "null to 1 MDE assumed" in loop.assumed
    assert loop.sequential.expected_runs > null.runs_mean
    assert loop.sequential.expected_rounds > null.rounds_mean
    low, high = loop.sequential.runs_range
    assert low <= loop.sequential.expected_runs <= high
    given = estimate.sequential_estimate(plan, effects=(0.0, 0.0))
    assert given.effects_from == "given" and given.sequential.expected_runs == null.runs_mean


def test_plan_stats_power_and_the_verdict_header_print_one_mde(write_audit):
    """Issue 53, must-show 3: for one design (2 arms × 2 seeds against 3) `plan`, `stats power`
    and the verdict table's header printed 15σ (α/2, unsaid), 10.03σ and 8.1–12.0σ; they now
    call one function and print one number, at the α the family is judged at (said)."""
    from archaudit.audit.planning.power_plan import plan_power
    from archaudit.formatting import num
    from archaudit.stats import design_power, judge
    from archaudit.stats.choices.options import JudgeOptions
    from archaudit.stats.judging.judgement_text import header
    from archaudit.stats.records.table import Row, Table

    seeds = {"noise_floor": 3, "arms": 2}
    plan = make_plan(load_audit(write_audit(arms=["qk_norm", "softpick"], seeds=seeds)))
    (family,) = plan_power(plan)
    ((n, planned),) = family.mdes
    alpha = family.design.alpha
    options = JudgeOptions(alpha=alpha)
    stated = design_power(2, 2, options, baseline_seeds=3).mde_sigmas
    values = {"baseline": [0.0, 0.3, -0.2], "qk_norm": [0.1, -0.1], "softpick": [0.2, 0.4]}
    table = Table(
        tuple(
            Row(arm=arm, scale="s", seed=k, metric="acc", value=v, line=0)
            for arm, vs in values.items()
            for k, v in enumerate(vs)
        )
    )
    judgement = judge(table, "acc", options)
    assert n == 2 and planned == stated
    assert judgement.design is not None and dict(judgement.design.mdes)[2] == planned
    line = next(x for x in header(judgement) if x.startswith("design's MDE"))
    assert f"MDE {num(planned)} σ" in line and f"α = {alpha:g}" in line
    said = " ".join(family.lines())
    assert f"α = {num(alpha)}" in said
    if len(plan.spec.primary_metrics) > 1:
        assert "split over" in said


def test_a_spent_probe_budget_measures_one_scale_and_estimates_the_rest(
    monkeypatch: pytest.MonkeyPatch, write_audit, tmp_path
):
    """Issue 57: a first `plan` of a large audit probed every (arm, scale) pair (778 minutes
    announced at a load of 46). With a budget that fits the first scale's run and nothing
    more, it measures that run and estimates the other scale from FLOPs, marked ≈ (and the
    audit's start and loop from the reference step)."""
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path / "cache"))
    steady_machine(monkeypatch)
    monkeypatch.setattr(estimate, "AUDIT_START_REFS", 1e15)
    monkeypatch.setattr(estimate, "LOOP_REFS", 1e15)
    scales = {
        "xs": {"d_model": 32, "n_layers": 1, "n_heads": 2, "context_length": 32},
        "s": {"d_model": 64, "n_layers": 2, "n_heads": 2, "context_length": 32},
    }
    plan = make_plan(load_audit(write_audit(scales=scales, executor={"workers": 1})))
    shapes: list[str] = []
    real = probe.measure_shape
    monkeypatch.setattr(
        probe, "measure_shape", lambda cfg, run, *a: shapes.append(run.scale) or real(cfg, run, *a)
    )
    first = plan.runs[0].path  # the baseline's first run at the first scale
    monkeypatch.setattr(estimate, "probe_seconds", lambda run: 0.0 if run.path == first else 1e15)
    summary = plan_summary(plan, probe_budget=1e9)
    assert len(shapes) == 1
    estimated = {r.run.scale for r in summary.runs if r.cost.approx}
    measured = {r.run.scale for r in summary.runs if not r.cost.approx}
    assert measured == set(shapes) and estimated == set(scales)  # xs: the arm's step from FLOPs
    assert all(r.cost.approx for r in summary.runs if r.run.scale not in shapes)
    assert summary.approx_runs == sum(r.cost.approx for r in summary.runs) > 0
    assert all(r.cost.seconds and r.cost.seconds > 0 for r in summary.runs)


def test_a_budget_spent_before_the_first_probe_estimates_everything_from_the_reference(
    monkeypatch: pytest.MonkeyPatch, write_audit, tmp_path
):
    """Issue 57: a first `plan` of the starter at a load of 12-19 took 519 s: the start-up and
    the first scale were probed whatever the budget (19 CPU-seconds, 262 s of wall at a load of
    19), and the audit's start and the loop's judgements, left unmeasured, counted as 0 (a
    2-arm loop took 1.41x its estimate). The budget counts from the plan's start; with it spent
    before the first probe nothing is measured, every run's time is estimated from FLOPs and
    the reference step (approx), and so are the audit's start and each round's judgement."""
    import time

    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path / "cache"))
    steady_machine(monkeypatch)
    measured: list[str] = []
    for name in ("measure_shape", "measure_steps", "_loop_probe"):
        monkeypatch.setattr(probe, name, lambda *a, name=name: measured.append(name))
    monkeypatch.setattr(probe, "warm_start", lambda *a: measured.append("warm_start"))
    plan = make_plan(load_audit(write_audit(executor={"workers": 2})))
    started = time.perf_counter() - 100.0  # imports and the grid took the whole budget
    summary = plan_summary(plan, probe_budget=60.0, started=started)
    assert measured == []
    assert summary.approx_runs == summary.total_runs
    assert all(r.cost.seconds and r.cost.seconds > 0 for r in summary.runs)
    assert summary.overheads_approx
    assert summary.audit_start_s and summary.audit_start_s > 0
    assert summary.round_overhead_s and summary.round_overhead_s > 0
    loop = estimate.sequential_estimate(
        plan,
        seconds_per_run=summary.mean_run_seconds,
        workers=2,
        audit_start_s=summary.audit_start_s,
        loop=(summary.run_overhead_s or 0.0, summary.round_overhead_s, summary.finish_s or 0.0),
    )
    bare = estimate.sequential_estimate(plan, seconds_per_run=summary.mean_run_seconds, workers=2)
    assert loop.sequential.wall_s and bare.sequential.wall_s
    assert loop.sequential.wall_s > bare.sequential.wall_s  # the overheads are counted


def test_a_budget_with_time_left_still_measures_the_first_scale(
    monkeypatch: pytest.MonkeyPatch, write_audit, tmp_path
):
    """Started within the budget, the start-up and the first scale are measured (the next
    plan reads them), only what does not fit is estimated."""
    import time

    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path / "cache"))
    steady_machine(monkeypatch)
    plan = make_plan(load_audit(write_audit(executor={"workers": 1})))
    summary = plan_summary(plan, probe_budget=1e-6, started=time.perf_counter() + 3600.0)
    assert any(not r.cost.approx for r in summary.runs)
