"""What a plan costs: parameters and tokens per run, and each run's time from measured parts.

A run's time is its process start-up, its model's warm-up (compilation included), its training
steps, its validations, its checkpoint saves and its suite, each measured on this machine by
`archaudit.audit.planning.probe` (the trainer's own step, compiled, activation-checkpointed and
clipped as the recipe says) on each scale's first run and cached per machine and shape. The other
arms' compute is scaled by their own training step, timed once per arm and scale (a few steps: their
FLOPs per token miss what softpick's or an MoE's kernels cost). Runs spread over the executor's
workers; a round of the sequential loop ends with its slowest wave of runs. The audit's own
start (`probe.audit_start`) and, on the local executor, the coordinator's work per run and each
round's judgement (`probe.loop_cost`, from the timeline of a tiny audit run once per machine)
are counted beside the runs; the report and the verdict tables printed at the end are not.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import Plan, RunSpec, model_sizes
from archaudit.audit.planning.budget import (
    DEFAULT_PROBE_BUDGET,
    REFERENCE_COSTS,
    ProbeBudget,
    audit_start_from_reference,
    loop_from_reference,
    nearest_scale,
    shape_from_flops,
    shape_from_reference,
    start_from_reference,
    startup_probe_refs,
    step_ratio_from_flops,
)
from archaudit.audit.planning.effects import PlannedEffects
from archaudit.audit.planning.probe import (
    PROBE_STEPS,
    WARMUP_STEPS,
    LoopCost,
    Neighbours,
    ShapeCost,
    Timed,
    audit_start,
    loop_cost,
    reference,
    reference_step,
    shape_cost,
    startup,
    step_cost,
)
from archaudit.audit.setup.protocol import ProtocolNote
from archaudit.progress import log
from archaudit.rundir import AUDIT_FILE

if TYPE_CHECKING:
    from archaudit.audit.execute.sequential import Family
    from archaudit.audit.grid.store import RunStatus
    from archaudit.stats.simulation.sequential import SequentialRule


@dataclass(frozen=True)
class RunCost:
    params: int
    active_params: int
    """What a token's forward multiplies by (MoE: k of E experts): FLOPs per token use it."""
    tokens: int
    flops_per_token: float
    train_seconds: float | None
    """The training steps' wall time; None when the probe was skipped."""
    seconds: float | None = None
    """The whole run's wall time: start-up, warm-up, steps, validation, saves, the suite."""
    cpu_seconds: float | None = None
    """The same in CPU time (user + system)."""
    approx: bool = False
    """Part of the time estimated from FLOPs, not measured (the probe's budget ran out: shown
    ≈, `archaudit.audit.planning.budget`)."""


@dataclass(frozen=True)
class CostedRun:
    """One planned run and what it costs; in JSON, the run's fields and the cost's side by
    side."""

    run: RunSpec
    cost: RunCost

    def to_json(self) -> dict[str, Any]:
        return self.run.to_json() | dataclasses.asdict(self.cost)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CostedRun:
        cost = {f.name: data[f.name] for f in dataclasses.fields(RunCost) if f.name in data}
        return cls(RunSpec.from_json(data), RunCost(**cost))


@dataclass(frozen=True)
class SequentialCost:
    """`run --until-settled`: the expected runs and rounds of the closed loop."""

    expected_runs: float
    power: float | None
    """The share of planted effects found; None when no arm has one."""
    expected_rounds: float
    wall_s: float | None
    """None without a time per run (the probe was skipped)."""
    runs_range: tuple[float, float]
    """The runs of 80% of the simulated loops (10th to 90th percentile, summed over families)."""
    wall_range_s: tuple[float, float] | None
    """The wall time at the range's ends, each at the reference step's fastest and slowest
    repeat (`PlanSummary.speed_range`); None without a time per run."""


@dataclass(frozen=True)
class FixedCost:
    """The fixed design with the sequential design's power: its seeds per arm and runs."""

    seeds_per_arm: int
    runs: float
    power: float | None
    wall_s: float | None


@dataclass(frozen=True)
class SequentialEstimate:
    """The sequential design's cost next to the fixed design with the same power."""

    metric: str
    effects_from: str
    """pilot | given | prior: where the simulated effects came from (`prior`: none known, each
    arm's from null to its family's loop MDE, `stats.simulation.plan_power.prior_loop`)."""
    max_seeds: int
    audits: int
    sequential: SequentialCost
    fixed: FixedCost
    assumed: str = ""
    """The effects simulated, in words (`plan`'s line says them)."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SequentialEstimate:
        return cls(
            **{k: data[k] for k in ("metric", "effects_from", "max_seeds", "audits")},
            assumed=data.get("assumed", ""),
            sequential=_sequential_cost(data["sequential"]),
            fixed=FixedCost(**data["fixed"]),
        )


def _sequential_cost(data: dict[str, Any]) -> SequentialCost:
    """A `SequentialCost` from its JSON (its ranges are lists there)."""
    wall = data.get("wall_range_s")
    return SequentialCost(
        **{k: v for k, v in data.items() if not k.endswith("range_s") and k != "runs_range"},
        runs_range=_pair(data["runs_range"]),
        wall_range_s=None if wall is None else _pair(wall),
    )


def _pair(values: Sequence[float]) -> tuple[float, float]:
    low, high = values
    return float(low), float(high)


@dataclass(frozen=True)
class PlanSummary:
    """The plan for machines (`archaudit plan --json`): every run with its cost, the workers of
    the audit's executor and the estimated wall time of training."""

    audit: str
    audit_dir: str
    runs: tuple[CostedRun, ...]
    workers: int
    estimated_wall_s: float | None
    """All runs' seconds over the workers; None when the probe was skipped."""
    notes: tuple[ProtocolNote, ...]
    sequential: SequentialEstimate | None = None
    """With `--until-settled` or a sequential seed policy."""
    speed_range: tuple[float, float] | None = None
    """The reference step's fastest and slowest repeat over its mean at plan time: how far this
    machine's speed moves now, the estimate's range (None without the probe)."""
    audit_start_s: float | None = None
    """What the audit pays once beside its runs (`probe.audit_start`), in `estimated_wall_s`;
    None without the probe."""
    audit_start_cpu_s: float | None = None
    """The same in CPU seconds (not in `estimated_cpu_s`, the runs' own: `stress --plan` adds
    it to the sweep's)."""
    run_overhead_s: float | None = None
    """The coordinator's work per run beyond the run's own time, and `round_overhead_s` per
    judgement (`probe.loop_cost`, local executor), both in `estimated_wall_s` and the loop's
    wall; None without the probe or off the local executor."""
    round_overhead_s: float | None = None
    finish_s: float | None = None
    """The last run's end to `run`'s exit, once (`probe.loop_cost`: the last judgement, the
    verdict tables, the report), in `estimated_wall_s` and the loop's wall; None as above."""
    probe_budget_s: float | None = None
    """The probe's budget (`--probe-budget`); None without the probe."""
    overheads_approx: bool = False
    """The audit's start and the loop's costs estimated from the reference step (≈), not
    measured: the budget was spent before their probes."""

    @property
    def approx_runs(self) -> int:
        """Runs whose time is partly estimated from FLOPs (≈), not measured."""
        return sum(1 for r in self.runs if r.cost.approx and r.cost.seconds is not None)

    @property
    def estimated_wall_range_s(self) -> tuple[float, float] | None:
        """The estimated wall time at the machine's fastest and slowest speed now."""
        if self.estimated_wall_s is None or self.speed_range is None:
            return None
        low, high = self.speed_range
        return self.estimated_wall_s * low, self.estimated_wall_s * high

    @property
    def total_runs(self) -> int:
        return len(self.runs)

    @property
    def mean_run_seconds(self) -> float | None:
        """The mean estimated wall time of one run; None without the probe."""
        seconds = [r.cost.seconds for r in self.runs if r.cost.seconds is not None]
        return sum(seconds) / len(seconds) if seconds else None

    @property
    def estimated_cpu_s(self) -> float | None:
        """All runs' CPU seconds (user + system); None without the probe."""
        seconds = [r.cost.cpu_seconds for r in self.runs if r.cost.cpu_seconds is not None]
        return sum(seconds) if seconds else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "audit": self.audit,
            "audit_dir": self.audit_dir,
            "runs": [run.to_json() for run in self.runs],
            "total_runs": self.total_runs,
            "workers": self.workers,
            "estimated_wall_s": self.estimated_wall_s,
            "estimated_wall_range_s": self.estimated_wall_range_s,
            "speed_range": self.speed_range,
            "audit_start_s": self.audit_start_s,
            "audit_start_cpu_s": self.audit_start_cpu_s,
            "run_overhead_s": self.run_overhead_s,
            "round_overhead_s": self.round_overhead_s,
            "finish_s": self.finish_s,
            "probe_budget_s": self.probe_budget_s,
            "approx_runs": self.approx_runs,
            "overheads_approx": self.overheads_approx,
            "notes": [note.to_json() for note in self.notes],
        }
        if self.sequential is not None:
            out["sequential"] = self.sequential.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlanSummary:
        sequential = data.get("sequential")
        return cls(
            audit=data["audit"],
            audit_dir=data["audit_dir"],
            runs=tuple(CostedRun.from_json(run) for run in data["runs"]),
            workers=data["workers"],
            estimated_wall_s=data["estimated_wall_s"],
            notes=tuple(ProtocolNote(**note) for note in data["notes"]),
            sequential=SequentialEstimate.from_json(sequential) if sequential else None,
            speed_range=_pair(data["speed_range"]) if data.get("speed_range") else None,
            audit_start_s=data.get("audit_start_s"),
            audit_start_cpu_s=data.get("audit_start_cpu_s"),
            run_overhead_s=data.get("run_overhead_s"),
            round_overhead_s=data.get("round_overhead_s"),
            finish_s=data.get("finish_s"),
            probe_budget_s=data.get("probe_budget_s"),
            overheads_approx=bool(data.get("overheads_approx", False)),
        )


def estimate(
    plan: Plan,
    *,
    probe: bool = True,
    threads: int = 0,
    beside: int = 0,
    warm: bool = False,
    measure: bool = True,
    budget: ProbeBudget | None = None,
    between: Callable[[], None] | None = None,
) -> dict[str, RunCost]:
    """Cost of every run, keyed by its path. Times come from the probes (measured here unless
    cached, beside `beside` runs and starting `warm` as the executor will run them, for at most
    `budget`'s seconds, the rest estimated from FLOPs and the reference step:
    `archaudit.audit.planning.budget`; with `measure` False only cached ones, else none). `between`
    runs once the scales are measured, the probe's neighbours paused (`plan_summary`'s probes
    of the audit's start and loop)."""
    fallback = measure
    budget = ProbeBudget(0.0) if not measure else budget or ProbeBudget()
    with Neighbours(beside) as neighbours:
        return _estimate(plan, probe, threads, neighbours, warm, budget, between, fallback)


def _estimate(
    plan: Plan,
    probe: bool,
    threads: int,
    neighbours: Neighbours,
    warm: bool,
    budget: ProbeBudget,
    between: Callable[[], None] | None,
    fallback: bool = False,
) -> dict[str, RunCost]:
    """`estimate`'s body; with `fallback`, what no probe measured (the start-up, every scale)
    is estimated from the reference step (`budget.from_reference`), marked approx."""
    from archaudit.model import training_flops_per_token

    device = plan.spec.recipe.device
    start = (
        cached_or_measured(
            lambda m: startup(device, threads, warm=warm, measure=m),
            budget,
            reference_step().wall * startup_probe_refs(warm=warm),
        )
        if probe
        else None
    )
    start_approx = probe and fallback and start is None
    if start_approx:
        start = start_from_reference(reference_step(), warm=warm)
    parts = (
        _probed(plan, threads, neighbours, budget, between, fallback) if start is not None else {}
    )
    costs = {}
    for run in plan.runs:
        model = run.model  # final, vocabulary included (data/vocabulary.py)
        params, active = model_sizes(model)
        flops = training_flops_per_token(model, active)
        tokens = run.recipe.steps * run.recipe.batch_tokens
        part = parts.get((run.arm, run.scale))
        if start is None or part is None:
            costs[run.path] = RunCost(params, active, tokens, flops, None)
            continue
        total = run_time(run, part.shape, start, part.ratio, part.cpu_ratio)
        train = (part.shape.step * (run.recipe.steps * part.ratio)).wall
        approx = part.approx or start_approx
        costs[run.path] = RunCost(
            params, active, tokens, flops, train, total.wall, total.cpu, approx=approx
        )
    return costs


T = TypeVar("T")


def cached_or_measured(
    get: Callable[[bool], T | None], budget: ProbeBudget, seconds: float
) -> T | None:
    """`get(False)` (the cached entry), else `get(True)` (measured) when `budget` allows a
    probe of about `seconds`, else None."""
    value = get(False)
    if value is None and budget.allows(seconds):
        value = get(True)
    return value


def pair_runs(plan: Plan) -> list[RunSpec]:
    """The first run of each (arm, scale) pair, in the plan's order: what the probe measures
    (each scale's first run whole, every other arm's training step)."""
    firsts: dict[tuple[str, str], RunSpec] = {}
    for run in plan.runs:
        firsts.setdefault((run.arm, run.scale), run)
    return list(firsts.values())


@dataclass(frozen=True)
class Part:
    """What one (arm, scale) pair's runs cost: its scale's parts, its step over theirs, and
    whether any of it was estimated from FLOPs (`approx`, shown ≈) rather than measured."""

    shape: ShapeCost
    ratio: float
    approx: bool = False
    cpu_ratio: float | None = None
    """The arm's step CPU over the scale's, where both were measured (None: `ratio`). On a
    shared machine the wall ratio of two probes taken minutes apart is the load's, not the
    arm's (hybrid_norm's step read 2.45× the baseline's in wall time, 1.40× in CPU, issue 54);
    the CPU estimate scales by the CPU ratio."""


def _probed(
    plan: Plan,
    threads: int,
    neighbours: Neighbours,
    budget: ProbeBudget,
    between: Callable[[], None] | None,
    fallback: bool = False,
) -> dict[tuple[str, str], Part]:
    """(arm, scale) → its `Part`: each scale's shape cached or measured (while the budget
    lasts), then `between`, then each arm's step (while the budget
    lasts), what is left estimated from FLOPs (with `fallback` and no scale measured, the first
    scale from the reference step); the pairs not cached counted up front, with their time, and
    each line counting toward them (`ProbeCount`)."""
    pairs = pair_runs(plan)
    firsts: dict[str, RunSpec] = {}
    for run in pairs:
        firsts.setdefault(run.scale, run)
    missing = _unmeasured(pairs, threads, neighbours) if budget.seconds > 0 else []
    count = ProbeCount.of(missing, budget.seconds)

    def shape_of(run: RunSpec) -> Callable[[bool], ShapeCost | None]:
        def get(m: bool) -> ShapeCost | None:
            label = count.label(run) if m else ""
            return shape_cost(run.model, run, threads, neighbours, measure=m, label=label)

        return get

    shapes = {
        scale: shape_cost(run.model, run, threads, neighbours, measure=False)
        for scale, run in firsts.items()
    }
    for scale, run in firsts.items():
        if shapes[scale] is None:
            shapes[scale] = cached_or_measured(shape_of(run), budget, probe_seconds(run))
    if between is not None:
        neighbours.pause()
        between()
    measured = {scale: shape for scale, shape in shapes.items() if shape is not None}
    approx = not measured
    if approx and fallback and firsts:
        scale, run = next(iter(firsts.items()))
        measured = {scale: shape_from_reference(run, reference_step())}
    if not measured:
        return {}
    parts = {(r.arm, r.scale): _part(r, firsts, measured, budget, count, threads, neighbours)
             for r in pairs}  # fmt: skip
    if approx:
        return {pair: dataclasses.replace(part, approx=True) for pair, part in parts.items()}
    return parts


def _part(
    run: RunSpec,
    firsts: dict[str, RunSpec],
    measured: dict[str, ShapeCost],
    budget: ProbeBudget,
    count: ProbeCount,
    threads: int,
    neighbours: Neighbours,
) -> Part:
    """One pair's `Part`: its scale's measured shape (else the nearest measured scale's scaled
    by FLOPs) and its step over the scale's probed model's (cached or measured while the
    budget lasts, else their FLOPs' ratio)."""
    first = firsts[run.scale]
    shape, approx = measured.get(run.scale), False
    if shape is None:
        anchor = nearest_scale(first, {s: firsts[s] for s in measured})
        shape, approx = shape_from_flops(measured[anchor], firsts[anchor], first), True
    if run.model == first.model:
        return Part(shape, 1.0, approx)

    def step(m: bool) -> Timed | None:
        label = count.label(run) if m else ""
        return step_cost(run.model, run, threads, neighbours, measure=m, label=label)

    measured_step = cached_or_measured(step, budget, probe_seconds(run))
    if measured_step is None:
        return Part(shape, step_ratio_from_flops(run, first), True)
    cpu_ratio = measured_step.cpu / shape.step.cpu if shape.step.cpu > 0 else None
    return Part(shape, measured_step.wall / shape.step.wall, approx, cpu_ratio)


AUDIT_START_REFS = REFERENCE_COSTS.cold_start + REFERENCE_COSTS.server_start
"""The audit's start probe (a cold interpreter and a server's preload), in reference steps."""
LOOP_REFS = 1100.0
"""The loop probe (its tiny audit planned, then run: 5 runs in 2 rounds, the report), in
reference steps: 75.5 s at 0.069 s a step at a load of 13 (`benchmarks/plan_parts.json`)."""
PAIR_START_REFS = 40.0
"""A probed pair's fixed cost (building the model and its optimizer, a neighbour's start,
the checkpoint and the suite of a whole shape), in reference steps (`probe.reference_step`)."""
STEP_REFS_PER_GFLOP = 8.0
"""A probed training step's time per GFLOP of the step (6·N·tokens and attention), in
reference steps: the model's kernels are slower per FLOP than the reference's 160 × 160 matmuls
(small matrices, softmax, norms, the optimizer)."""


def probe_seconds(run: RunSpec) -> float:
    """About how long the probe takes to measure `run`'s pair, said before it starts: its fixed
    part and its `WARMUP_STEPS` + `PROBE_STEPS` steps from their FLOPs, both in reference steps
    at this machine's speed now (so a loaded machine's estimate is longer)."""
    from archaudit.model import training_flops_per_token

    flops = training_flops_per_token(run.model, model_sizes(run.model)[1])
    gflops = (WARMUP_STEPS + PROBE_STEPS) * flops * run.recipe.batch_tokens / 1e9
    return reference_step().wall * (PAIR_START_REFS + STEP_REFS_PER_GFLOP * gflops)


@dataclass
class ProbeCount:
    """The pairs the probe has to measure, said up front with their estimated time ("plan:
    measuring 40 (arm, scale) pairs on this machine, about 12.5 min"), then each pair's line
    headed by its place in that total and the time left ("[3/40, about 10.1 min left]": the
    estimates of the pairs left, times the measured over the estimated time of those done)."""

    estimates: dict[str, float]
    """Each pair's estimated seconds (`probe_seconds`), by its first run's path, in order."""
    started: float
    budget: float = math.inf
    """The probe's budget in seconds: no line promises more."""
    done: int = 0

    @classmethod
    def of(cls, missing: list[RunSpec], budget: float = math.inf) -> ProbeCount:
        estimates = {run.path: probe_seconds(run) for run in missing}
        if missing:
            pairs = f"{len(missing)} (arm, scale) pair{'s' * (len(missing) != 1)}"
            minutes = sum(estimates.values()) / 60
            line = f"plan: measuring {pairs} on this machine, about {minutes:.1f} min"
            if minutes * 60 > budget:
                line = (
                    f"plan: {pairs} not measured on this machine yet (about {minutes:.1f} min); "
                    f"measuring for at most {budget:g} s (--probe-budget), the rest estimated "
                    "from their FLOPs (shown ≈; the next plan measures more)"
                )
            log(line)
        return cls(estimates, time.perf_counter(), budget)

    def label(self, run: RunSpec) -> str:
        """The count for `run`'s line ("" for a cached pair); counts it as measured."""
        if run.path not in self.estimates:
            return ""
        seconds = list(self.estimates.values())
        done, left = sum(seconds[: self.done]), sum(seconds[self.done :])
        spent = time.perf_counter() - self.started
        pace = spent / done if done else 1.0
        self.done += 1
        head = f"[{self.done}/{len(seconds)}"
        if left * pace > self.budget - spent:  # the budget ends first
            return f"{head}, at most {max(self.budget - spent, 0.0) / 60:.1f} min left] "
        return f"{head}, about {left * pace / 60:.1f} min left] "


def _unmeasured(pairs: list[RunSpec], threads: int, neighbours: Neighbours) -> list[RunSpec]:
    """The pairs whose probe is not cached: a scale's first run without its shape, another
    model without its own step."""
    shapes: dict[str, RunSpec] = {}
    missing = []
    for run in pairs:
        first = shapes.setdefault(run.scale, run)
        if first is run:
            cached: object = shape_cost(run.model, run, threads, neighbours, measure=False)
        elif run.model == first.model:
            continue
        else:
            cached = step_cost(run.model, run, threads, neighbours, measure=False)
        if cached is None:
            missing.append(run)
    return missing


def run_time(
    run: RunSpec,
    shape: ShapeCost,
    start: Timed,
    ratio: float = 1.0,
    cpu_ratio: float | None = None,
) -> Timed:
    """One run's time from its shape's measured parts: start-up and warm-up once, then its
    steps, validations (every `eval_every` steps and the last), checkpoint saves (every
    `checkpoint_every` and the last) and suite, the compute scaled by `ratio` (the arm's step
    time over the probed run's), its CPU by `cpu_ratio` when given (the same in CPU time)."""
    recipe = run.recipe
    evals = -(-recipe.steps // recipe.eval_every)
    saves = -(-recipe.steps // recipe.checkpoint_every)
    compute = (
        shape.step * recipe.steps + shape.val_batch * (evals * recipe.eval_batches) + shape.suite
    )
    scaled = Timed(compute.wall * ratio, compute.cpu * (ratio if cpu_ratio is None else cpu_ratio))
    return start + shape.warmup + shape.save * saves + scaled


def plan_summary(
    plan: Plan,
    *,
    probe: bool = True,
    loop: bool = True,
    probe_budget: float = DEFAULT_PROBE_BUDGET,
    started: float | None = None,
) -> PlanSummary:
    """Every run of `plan` with its cost, probed unless `probe` is False for at most
    `probe_budget` seconds from `started` (`time.perf_counter()` at the command's start; else
    its first probe: `archaudit.audit.planning.budget`); the coordinator's costs (`probe.loop_cost`)
    unless `loop` is False. The tracker is checked first, as `run` checks it before anything
    starts."""
    from archaudit.audit.execute.trackers import check_tracker
    from archaudit.audit.launcher.executors import LocalExecutor, make_executor

    if plan.spec.tracker:
        check_tracker(plan.spec.tracker)
    pool = make_executor(plan.spec.executor, plan.audit_dir)
    budget = ProbeBudget(probe_budget, started)
    local = probe and loop and isinstance(pool, LocalExecutor)
    device = plan.spec.recipe.device
    found = _Overheads(device, pool.threads, pool.warm, local, budget, fallback=probe)
    costs = estimate(
        plan,
        probe=probe,
        threads=pool.threads,
        beside=pool.beside,
        warm=pool.warm,
        budget=budget,
        between=found,
    )
    if probe and not found.asked:
        found()  # no scale was probed: whatever is cached
    seconds = [c.seconds for c in costs.values() if c.seconds is not None]
    now = reference() if probe else None
    start, costs_between = found.start, found.loop
    pace = _pace(pool.workers, start, costs_between)
    return PlanSummary(
        audit=plan.spec.name,
        audit_dir=str(plan.audit_dir),
        runs=tuple(CostedRun(run, costs[run.path]) for run in plan.runs),
        workers=pool.workers,
        estimated_wall_s=_fixed_wall_s(seconds, pace) if probe and seconds else None,
        notes=plan.notes,
        speed_range=None if now is None else (now.fastest, now.slowest),
        audit_start_s=None if start is None else start.wall,
        audit_start_cpu_s=None if start is None else start.cpu,
        run_overhead_s=None if costs_between is None else costs_between.run.wall,
        round_overhead_s=None if costs_between is None else costs_between.round.wall,
        finish_s=None if costs_between is None else costs_between.finish.wall,
        probe_budget_s=probe_budget if probe else None,
        overheads_approx=found.approx,
    )


def _pace(workers: int, start: Timed | None, between: LoopCost | None) -> Pace:
    """The fixed design's pace from the audit's start and the coordinator's costs (0 where
    not measured); each run's own seconds are added where the wall is summed."""
    return Pace(
        None,
        workers,
        0.0 if start is None else start.wall,
        0.0 if between is None else between.run.wall,
        0.0 if between is None else between.round.wall,
        0.0 if between is None else between.finish.wall,
    )


@dataclass
class _Overheads:
    """The audit's start and (`local`) the loop's costs, cached or measured while the budget
    lasts, else (`fallback`) estimated from the reference step, when called (`estimate`'s
    `between`)."""

    device: str
    threads: int
    warm: bool
    local: bool
    budget: ProbeBudget
    fallback: bool = False
    """Estimate what the budget leaves unmeasured from the reference step (`approx`)."""
    start: Timed | None = None
    loop: LoopCost | None = None
    asked: bool = False
    approx: bool = False

    def __call__(self) -> None:
        self.asked = True
        now = reference_step()
        ref = now.wall
        device, threads, warm = self.device, self.threads, self.warm
        self.start = cached_or_measured(
            lambda m: audit_start(device, threads, warm=warm, measure=m),
            self.budget,
            ref * AUDIT_START_REFS,
        )
        if self.start is None and self.fallback:
            self.start, self.approx = audit_start_from_reference(now, warm=warm), True
        if self.local:
            self.loop = cached_or_measured(
                lambda m: loop_cost(device, threads, warm=warm, measure=m),
                self.budget,
                ref * LOOP_REFS,
            )
            if self.loop is None and self.fallback:
                self.loop, self.approx = loop_from_reference(now), True


def _fixed_wall_s(seconds: Sequence[float], pace: Pace) -> float:
    """The audit's start, then every run's seconds and its coordinator's work over the
    workers, then the finish (its one judgement, the tables, the report)."""
    runs = sum(seconds) + len(seconds) * pace.run_overhead_s
    return pace.audit_start_s + runs / max(pace.workers, 1) + pace.finish_s


def time_left(audit_dir: Path, statuses: Sequence[RunStatus]) -> float | None:
    """Wall seconds until the audit finishes, from `plan`'s model and its cached probes (None
    without the audit file or a probe): each unfinished run's time, less the share of its steps
    already trained, and the coordinator's work per run, over the executor's workers, then the
    finish (`probe.loop_cost`, when cached: the last judgement, the tables, the report); in a
    sequential audit whose loop has not ended, also the rounds still expected, each after a
    judgement (`later_rounds`: issue 57, "about 3.3 min left" while 16 more
    minutes of later rounds ran)."""
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.launcher.executors import LocalExecutor, make_executor
    from archaudit.audit.setup.spec import load_audit

    record = store.read_json(audit_dir / AUDIT_FILE) or {}
    source = record.get("source")
    if not source or not Path(source).is_file():
        return None
    looping = _loop_running(audit_dir, record, len(statuses))
    settings = [SEQUENTIAL] if looping else []
    plan = make_plan(load_audit(source, settings, runs_dir=audit_dir.parent))
    pool = make_executor(plan.spec.executor, plan.audit_dir)
    costs = estimate(plan, threads=pool.threads, beside=pool.beside, warm=pool.warm, measure=False)
    by_arm = {(run.arm, run.scale): costs[run.path].seconds for run in plan.runs}
    local = isinstance(pool, LocalExecutor)
    device = plan.spec.recipe.device
    loop = loop_cost(device, pool.threads, warm=pool.warm, measure=False) if local else None
    per_run = 0.0 if loop is None else loop.run.wall
    left = 0.0
    for status in statuses:
        seconds = by_arm.get((status.spec.arm, status.spec.scale))
        if seconds is None:
            return None
        if status.state != "done":
            left += seconds * (1 - status.step / max(status.spec.recipe.steps, 1)) + per_run
    finish = 0.0 if loop is None else loop.finish.wall
    left = left / max(pool.workers, 1) + finish
    if not looping:
        return left
    known = [s for s in by_arm.values() if s is not None]
    pace = Pace(
        sum(known) / max(len(known), 1),
        pool.workers,
        0.0,
        per_run,
        0.0 if loop is None else loop.round.wall,
    )  # no finish: counted once, above
    return left + later_rounds(plan, audit_dir, len(statuses), pace)


SEQUENTIAL = 'seeds.policy="sequential"'


def _loop_running(audit_dir: Path, record: dict[str, Any], runs: int) -> bool:
    """Whether the audit runs the sequential loop and the loop has not ended: its policy (or a
    published round) says sequential, and no summary covers its runs yet."""
    from archaudit.audit.execute.sequential import SUMMARY, record_dir

    folder = record_dir(audit_dir)
    if record.get("policy") != "sequential" and not folder.is_dir():
        return False
    summary = store.read_json(folder / SUMMARY) or {}
    return not (isinstance(summary.get("runs"), int) and summary["runs"] >= runs)


def later_rounds(plan: Plan, audit_dir: Path, runs: int, pace: Pace) -> float:
    """The wall time of the loop's rounds after the current one, as `plan --until-settled`
    expects them with no effect known (`expected_loop`): the runs past the `runs` the audit
    holds now, in the rounds past those published, each wave `pace` long and each round after
    a judgement (`plan`'s count: a judgement between two rounds, the finish once, in
    `time_left`)."""
    from archaudit.audit.execute.sequential import read_rounds

    expected_runs, expected_rounds = expected_loop(plan)
    rounds = expected_rounds - (len(read_rounds(audit_dir)) + 1)
    more = expected_runs - runs
    if more <= 0 or rounds <= 0:
        return 0.0
    waves = dataclasses.replace(pace, audit_start_s=0.0, round_overhead_s=0.0, finish_s=0.0)
    judgements = rounds * pace.round_overhead_s  # each later round waits for one
    return (_wall_s(more, max(rounds, 1.0), waves) or 0.0) + judgements


def expected_loop(plan: Plan) -> tuple[float, float]:
    """(runs, rounds) the loop is expected to take, summed over its families as `plan
    --until-settled` states them when no effect is known (`prior_loop`)."""
    from archaudit.audit.execute.sequential import (
        families,
        primary_metrics,
        sequential_rule,
        settle_options,
    )
    from archaudit.stats.simulation.plan_power import LOOP_AUDITS

    options = settle_options(plan)
    primaries = primary_metrics(plan, options)
    rule = sequential_rule(plan, options, len(primaries))
    costs, _ = _costs(families(plan, (primaries[0],)), rule, ({}, []), LOOP_AUDITS, 0)
    return sum(c.sequential_runs for c in costs), max([1.0, *(c.rounds for c in costs)])


def sequential_estimate(
    plan: Plan,
    *,
    effects: Sequence[float] = (),
    sigma: float | None = None,
    max_seeds: int | None = None,
    seconds_per_run: float | None = None,
    speed_range: tuple[float, float] = (1.0, 1.0),
    workers: int = 1,
    audits: int | None = None,
    seed: int = 0,
    audit_start_s: float = 0.0,
    loop: tuple[float, float, float] = (0.0, 0.0, 0.0),
) -> SequentialEstimate:
    """Expected runs (and wall time) of `run --until-settled` next to the fixed design with the
    same power, from simulations of the closed loop per (baseline, scale) family.

    `effects` are planted on the first arms of each family, in σ (in metric units when `sigma`
    is given). Without them a pilot (results already in the audit directory) supplies every
    arm's observed Δ/σ on the first primary metric. With neither, each arm's effect spreads
    from null to its family's loop MDE (`prior_loop`: the mean and range over that spread and
    the loop's randomness). The wall time's range: the runs' range at `speed_range` times
    `seconds_per_run`; both add `audit_start_s`, what the audit pays once beside its runs,
    and `loop`'s (seconds per run, per judgement between rounds, at the end) of the
    coordinator's work (`probe.loop_cost`).
    """
    from archaudit.audit.execute.sequential import (
        families,
        pilot_effects,
        primary_metrics,
        sequential_rule,
        settle_options,
    )
    from archaudit.stats.simulation.plan_power import LOOP_AUDITS

    audits = LOOP_AUDITS if audits is None else audits  # the plan's power lines' audits

    options = settle_options(plan, max_seeds=max_seeds)
    primaries = primary_metrics(plan, options)
    rule = sequential_rule(plan, options, len(primaries))
    metric = primaries[0]
    PlannedEffects(sigma=sigma, effects=tuple(effects)).check(plan)  # a library caller too
    planted = [e / sigma for e in effects] if sigma else [float(e) for e in effects]
    pilot = {} if planted else pilot_effects(plan, metric)
    pace = Pace(seconds_per_run, workers, audit_start_s, *loop)
    costs, tops = _costs(families(plan, (metric,)), rule, (pilot, planted), audits, seed)
    return SequentialEstimate(
        metric=metric,
        effects_from="pilot" if pilot else ("given" if planted else "prior"),
        max_seeds=rule.max_seeds,
        audits=audits,
        sequential=_loop_cost(costs, pace, speed_range),
        fixed=_fixed_design_cost(costs, pace),
        assumed=_assumed(pilot, planted, tops),
    )


def _costs(
    fams: Sequence[Family],
    rule: SequentialRule,
    known: tuple[dict[tuple[str, str], float], list[float]],
    audits: int,
    seed: int,
) -> tuple[list[FamilyCost], dict[str, float]]:
    """Each family's simulated cost: from the known effects (pilot, planted), else over the
    spread from null to the family's loop MDE (`tops`, by scale; empty when effects are known)."""
    pilot, planted = known
    if pilot or planted:
        return [
            _family_cost(rule, len(f.arms), _family_effects(f, pilot, planted), audits, seed)
            for f in fams
        ], {}
    tops = {f.scale: _loop_mde(rule, len(f.arms)) for f in fams}
    return [_prior_cost(rule, len(f.arms), tops[f.scale], audits, seed) for f in fams], tops


def _assumed(
    pilot: dict[tuple[str, str], float], planted: list[float], tops: dict[str, float]
) -> str:
    """The effects simulated, in words."""
    if pilot:
        return "the pilot's observed Δ/σ of each arm"
    if planted:
        return f"{', '.join(f'{e:g}' for e in planted)} σ on the first arms, the rest null"
    spread = ", ".join(f"0–{top:.1f} σ at {scale}" for scale, top in tops.items())
    return f"none known — null to 1 MDE assumed (each arm's |Δ| uniform on {spread})"


def _loop_mde(rule: SequentialRule, arms: int) -> float:
    """The loop's MDE in σ for `arms` arms, as `plan`'s power lines state it."""
    from archaudit.stats.simulation.plan_power import loop_power

    return loop_power(arms, rule.baseline_seeds, rule.alpha, rule.max_seeds)[0]


def _prior_cost(rule: SequentialRule, arms: int, top: float, audits: int, seed: int) -> FamilyCost:
    """One family's cost with no effect known: its arms' effects spread from null to `top` σ
    (`prior_loop`), every arm counted as planted (each has some effect in the spread)."""
    from archaudit.stats.simulation.plan_power import prior_loop

    loop = prior_loop(arms, rule, top, audits, seed)
    return FamilyCost(
        sequential_runs=loop.runs_mean,
        runs_range=loop.runs_range,
        rounds=loop.rounds_mean,
        fixed_runs=loop.fixed_runs,
        fixed_seeds=loop.fixed_seeds,
        planted=arms,
        sequential_found=arms * loop.power,
        fixed_found=arms * loop.fixed_power,
    )


@dataclass(frozen=True)
class Pace:
    """How fast runs go: each `seconds_per_run` (None without the probe) and the coordinator's
    `run_overhead_s`, `workers` at a time, after `audit_start_s` paid once; each judgement
    between rounds `round_overhead_s`, and `finish_s` after the last run (`probe.loop_cost`)."""

    seconds_per_run: float | None
    workers: int
    audit_start_s: float
    run_overhead_s: float = 0.0
    round_overhead_s: float = 0.0
    finish_s: float = 0.0


def _loop_cost(
    costs: Sequence[FamilyCost], pace: Pace, speed_range: tuple[float, float]
) -> SequentialCost:
    """The loop's runs, rounds, power and wall time summed over the families."""
    arms = sum(c.planted for c in costs)
    runs, rounds = sum(c.sequential_runs for c in costs), max([0.0, *(c.rounds for c in costs)])
    runs_range = (sum(c.runs_range[0] for c in costs), sum(c.runs_range[1] for c in costs))
    ends = zip(runs_range, speed_range, strict=True)
    walls = [_wall_s(n, rounds, pace, speed) for n, speed in ends]
    return SequentialCost(
        expected_runs=runs,
        power=sum(c.sequential_found for c in costs) / arms if arms else None,
        expected_rounds=rounds,
        wall_s=_wall_s(runs, rounds, pace),
        runs_range=runs_range,
        wall_range_s=None if walls[0] is None or walls[1] is None else (walls[0], walls[1]),
    )


def _fixed_design_cost(costs: Sequence[FamilyCost], pace: Pace) -> FixedCost:
    """The fixed design of the same power, summed over the families."""
    arms = sum(c.planted for c in costs)
    runs = sum(c.fixed_runs for c in costs)
    return FixedCost(
        seeds_per_arm=max([0, *(c.fixed_seeds for c in costs)]),
        runs=runs,
        power=sum(c.fixed_found for c in costs) / arms if arms else None,
        wall_s=_wall_s(runs, 1.0, pace),
    )


def _family_effects(
    family: Family, pilot: dict[tuple[str, str], float], planted: list[float]
) -> tuple[float, ...]:
    """The effects (in σ) simulated for the family's arms: the pilot's observed ones, else the
    planted ones on its first arms (the rest null)."""
    if pilot:
        return tuple(pilot.get((arm, family.scale), 0.0) for arm in family.arms)
    return tuple(planted[: len(family.arms)])


@dataclass(frozen=True)
class FamilyCost:
    """One (baseline, scale) family's simulated cost, summed over families by the estimate."""

    sequential_runs: float
    runs_range: tuple[float, float]
    rounds: float
    fixed_runs: float
    fixed_seeds: int
    planted: int
    """Arms with a planted (non-zero) effect."""
    sequential_found: float
    """Planted arms the sequential design finds, on average; fixed_found: the fixed design's."""
    fixed_found: float


def _family_cost(
    rule: SequentialRule, arms: int, effects: tuple[float, ...], audits: int, seed: int
) -> FamilyCost:
    """Simulate the family's closed loop, and on the same draws the fixed designs of 1 to
    2·max_seeds seeds per arm. The fixed design reported is the fewest seeds per arm whose
    power reaches the sequential design's."""
    from archaudit.stats.simulation.sequential import simulate_sequential

    sims = [
        simulate_sequential(
            arms=arms, rule=rule, audits=audits, effects=effects, fixed_seeds=k, seed=seed
        )
        for k in range(1, 2 * rule.max_seeds + 1)
    ]
    sim = sims[0]
    same = next((s for s in sims if s.fixed_power_planted >= sim.power_planted), sims[-1])
    count = sum(1 for e in effects if e != 0.0)
    return FamilyCost(
        sequential_runs=sim.runs_mean,
        runs_range=sim.runs_range,
        rounds=sim.rounds_mean,
        fixed_runs=same.fixed_runs,
        fixed_seeds=same.fixed_seeds,
        planted=count,
        sequential_found=count * (sim.power_planted if count else 0.0),
        fixed_found=count * (same.fixed_power_planted if count else 0.0),
    )


def _wall_s(runs: float, rounds: float, pace: Pace, speed: float = 1.0) -> float | None:
    """Each round's runs go out in waves of `workers`, and a round ends with its last wave
    and, but for the last, its judgement (the next round's seeds depend on its verdicts):
    rounds × ⌈runs per round / workers⌉ runs long, each `seconds_per_run` and the
    coordinator's work, a judgement between two rounds, after the audit's start and before
    its finish, all × `speed`."""
    if pace.seconds_per_run is None:
        return None
    rounds = max(rounds, 1.0)
    waves = rounds * math.ceil(runs / rounds / max(pace.workers, 1) - 1e-9)
    each = pace.seconds_per_run + pace.run_overhead_s
    judgements = (rounds - 1) * pace.round_overhead_s
    return (pace.audit_start_s + waves * each + judgements + pace.finish_s) * speed
