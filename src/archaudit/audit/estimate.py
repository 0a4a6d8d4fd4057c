"""What a plan costs: parameters and tokens per run, and each run's time from measured parts.

A run's time is its process start-up, its model's warm-up (compilation included), its training
steps, its validations, its checkpoint saves and its suite, each measured on this machine by
`archaudit.audit.probe` (the trainer's own step, compiled, activation-checkpointed and clipped as
the recipe says) on each scale's first run and cached per machine and shape. The other arms'
compute is scaled by their own training step, timed once per arm and scale (a few steps: their
FLOPs per token miss what softpick's or an MoE's kernels cost). Runs spread over the executor's
workers; a round of the sequential loop ends with its slowest wave of runs. The verdicts and
the report after the runs are not counted (seconds, against minutes of training).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.audit import store
from archaudit.audit.effects import PlannedEffects
from archaudit.audit.plan import Plan, RunSpec, model_sizes
from archaudit.audit.probe import (
    Neighbours,
    ShapeCost,
    Timed,
    shape_cost,
    startup,
    step_cost,
)
from archaudit.audit.protocol import ProtocolNote
from archaudit.config import ModelConfig
from archaudit.rundir import AUDIT_FILE

if TYPE_CHECKING:
    from archaudit.audit.sequential import Family
    from archaudit.audit.store import RunStatus
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
        cost = {f.name: data[f.name] for f in dataclasses.fields(RunCost)}
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
    """pilot | given | null: where the simulated effects came from."""
    max_seeds: int
    audits: int
    sequential: SequentialCost
    fixed: FixedCost

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SequentialEstimate:
        return cls(
            **{k: data[k] for k in ("metric", "effects_from", "max_seeds", "audits")},
            sequential=SequentialCost(**data["sequential"]),
            fixed=FixedCost(**data["fixed"]),
        )


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
        )


def estimate(
    plan: Plan,
    *,
    probe: bool = True,
    threads: int = 0,
    beside: int = 0,
    warm: bool = False,
    measure: bool = True,
) -> dict[str, RunCost]:
    """Cost of every run, keyed by its path. Times come from the probes (measured here unless
    cached, beside `beside` runs and starting `warm` as the executor will run them; with
    `measure` False only cached ones, else none)."""
    with Neighbours(beside) as neighbours:
        return _estimate(plan, probe, threads, neighbours, warm, measure)


def _estimate(
    plan: Plan, probe: bool, threads: int, neighbours: Neighbours, warm: bool, measure: bool
) -> dict[str, RunCost]:
    from archaudit.model import training_flops_per_token

    probed: dict[str, tuple[ShapeCost | None, ModelConfig]] = {}  # scale → probe, its model
    device = plan.spec.recipe.device
    start = startup(device, threads, warm=warm, measure=measure) if probe else None
    costs = {}
    for run in plan.runs:
        model = run.model  # final, vocabulary included (data/vocabulary.py)
        params, active = model_sizes(model)
        flops = training_flops_per_token(model, active)
        tokens = run.recipe.steps * run.recipe.batch_tokens
        if start is not None and run.scale not in probed:
            shape = shape_cost(model, run, threads, neighbours, measure=measure)
            probed[run.scale] = (shape, model)
        shape, probed_model = probed.get(run.scale, (None, model))
        ratio = _step_ratio(shape, model, probed_model, run, threads, neighbours, measure)
        if start is None or shape is None or ratio is None:
            costs[run.path] = RunCost(params, active, tokens, flops, None)
            continue
        total = run_time(run, shape, start, ratio)
        train = (shape.step * (run.recipe.steps * ratio)).wall
        costs[run.path] = RunCost(params, active, tokens, flops, train, total.wall, total.cpu)
    return costs


def _step_ratio(
    shape: ShapeCost | None,
    model: ModelConfig,
    probed: ModelConfig,
    run: RunSpec,
    threads: int,
    neighbours: Neighbours,
    measure: bool,
) -> float | None:
    """The run's step time over its scale's probed step: 1 for the probed model itself, else
    the arm's own step measured (or cached); None without a probe."""
    if shape is None or model == probed:
        return None if shape is None else 1.0
    step = step_cost(model, run, threads, neighbours, measure=measure)
    return None if step is None else step.wall / shape.step.wall


def run_time(run: RunSpec, shape: ShapeCost, start: Timed, ratio: float = 1.0) -> Timed:
    """One run's time from its shape's measured parts: start-up and warm-up once, then its
    steps, validations (every `eval_every` steps and the last), checkpoint saves (every
    `checkpoint_every` and the last) and suite, the compute scaled by `ratio` (the arm's step
    time over the probed run's)."""
    recipe = run.recipe
    evals = -(-recipe.steps // recipe.eval_every)
    saves = -(-recipe.steps // recipe.checkpoint_every)
    compute = (
        shape.step * recipe.steps + shape.val_batch * (evals * recipe.eval_batches) + shape.suite
    )
    return start + shape.warmup + shape.save * saves + compute * ratio


def plan_summary(plan: Plan, *, probe: bool = True) -> PlanSummary:
    """Every run of `plan` with its cost, probed unless `probe` is False. The tracker is
    checked first, as `run` checks it before anything starts."""
    from archaudit.audit.executors import make_executor
    from archaudit.audit.trackers import check_tracker

    if plan.spec.tracker:
        check_tracker(plan.spec.tracker)
    pool = make_executor(plan.spec.executor, plan.audit_dir)
    costs = estimate(plan, probe=probe, threads=pool.threads, beside=pool.beside, warm=pool.warm)
    seconds = [c.seconds for c in costs.values() if c.seconds is not None]
    return PlanSummary(
        audit=plan.spec.name,
        audit_dir=str(plan.audit_dir),
        runs=tuple(CostedRun(run, costs[run.path]) for run in plan.runs),
        workers=pool.workers,
        estimated_wall_s=sum(seconds) / pool.workers if probe else None,
        notes=plan.notes,
    )


def time_left(audit_dir: Path, statuses: Sequence[RunStatus]) -> float | None:
    """Wall seconds until the audit's runs finish, from `plan`'s model and its cached probes
    (None without the audit file or a probe): each unfinished run's time, less the share of
    its steps already trained, over the executor's workers."""
    from archaudit.audit.executors import make_executor
    from archaudit.audit.plan import make_plan
    from archaudit.audit.spec import load_audit

    source = (store.read_json(audit_dir / AUDIT_FILE) or {}).get("source")
    if not source or not Path(source).is_file():
        return None
    plan = make_plan(load_audit(source, runs_dir=audit_dir.parent))
    pool = make_executor(plan.spec.executor, plan.audit_dir)
    costs = estimate(plan, threads=pool.threads, beside=pool.beside, warm=pool.warm, measure=False)
    by_arm = {(run.arm, run.scale): costs[run.path].seconds for run in plan.runs}
    left = 0.0
    for status in statuses:
        seconds = by_arm.get((status.spec.arm, status.spec.scale))
        if seconds is None:
            return None
        if status.state != "done":
            left += seconds * (1 - status.step / max(status.spec.recipe.steps, 1))
    return left / max(pool.workers, 1)


def sequential_estimate(
    plan: Plan,
    *,
    effects: Sequence[float] = (),
    sigma: float | None = None,
    max_seeds: int | None = None,
    seconds_per_run: float | None = None,
    workers: int = 1,
    audits: int = 1000,
    seed: int = 0,
) -> SequentialEstimate:
    """Expected runs (and wall time) of `run --until-settled` next to the fixed design with the
    same power, from simulations of the closed loop per (baseline, scale) family.

    `effects` are planted on the first arms of each family, in σ (in metric units when `sigma`
    is given). Without them a pilot (results already in the audit directory) supplies every
    arm's observed Δ/σ on the first primary metric. With neither, every arm is null.
    """
    from archaudit.audit.sequential import (
        families,
        pilot_effects,
        primary_metrics,
        sequential_rule,
        settle_options,
    )

    options = settle_options(plan, max_seeds=max_seeds)
    primaries = primary_metrics(plan, options)
    rule = sequential_rule(plan, options, len(primaries))
    metric = primaries[0]
    PlannedEffects(sigma=sigma, effects=tuple(effects)).check(plan)  # a library caller too
    planted = [e / sigma for e in effects] if sigma else [float(e) for e in effects]
    pilot = {} if planted else pilot_effects(plan, metric)
    costs = [
        _family_cost(rule, len(f.arms), _family_effects(f, pilot, planted), audits, seed)
        for f in families(plan, (metric,))
    ]
    arms = sum(c.planted for c in costs)
    seq_runs, rounds = sum(c.sequential_runs for c in costs), max([0.0, *(c.rounds for c in costs)])
    fixed_runs = sum(c.fixed_runs for c in costs)
    return SequentialEstimate(
        metric=metric,
        effects_from="pilot" if pilot else ("given" if planted else "null"),
        max_seeds=rule.max_seeds,
        audits=audits,
        sequential=SequentialCost(
            expected_runs=seq_runs,
            power=sum(c.sequential_found for c in costs) / arms if arms else None,
            expected_rounds=rounds,
            wall_s=_wall_s(seq_runs, rounds, seconds_per_run, workers),
        ),
        fixed=FixedCost(
            seeds_per_arm=max([0, *(c.fixed_seeds for c in costs)]),
            runs=fixed_runs,
            power=sum(c.fixed_found for c in costs) / arms if arms else None,
            wall_s=_wall_s(fixed_runs, 1.0, seconds_per_run, workers),
        ),
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
        rounds=sim.rounds_mean,
        fixed_runs=same.fixed_runs,
        fixed_seeds=same.fixed_seeds,
        planted=count,
        sequential_found=count * (sim.power_planted if count else 0.0),
        fixed_found=count * (same.fixed_power_planted if count else 0.0),
    )


def _wall_s(
    runs: float, rounds: float, seconds_per_run: float | None, workers: int
) -> float | None:
    """Each round's runs go out in waves of `workers`, and a round ends with its last wave
    (the next round's seeds depend on its verdicts): rounds × ⌈runs per round / workers⌉ runs
    long."""
    if seconds_per_run is None:
        return None
    rounds = max(rounds, 1.0)
    return rounds * math.ceil(runs / rounds / max(workers, 1) - 1e-9) * seconds_per_run
