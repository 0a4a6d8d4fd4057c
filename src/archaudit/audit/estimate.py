"""What a plan costs: parameters and tokens per run, and training time from a short probe.

The probe times a few steps of each scale's baseline on random tokens, after two warm-up steps.
It runs the trainer's own step (`archaudit.train.step`): compiled, activation-checkpointed and
clipped as the recipe says, so `plan` times the step that `run` trains. The other arms are
scaled by their training FLOPs per token, so a plan of many arms costs one probe per scale.
Evaluation time is not included.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from archaudit.audit.plan import Plan, RunSpec, model_sizes
from archaudit.audit.protocol import ProtocolNote
from archaudit.config import ModelConfig

if TYPE_CHECKING:
    from archaudit.audit.sequential import Family
    from archaudit.stats.sequential import SequentialRule

PROBE_STEPS = 2
WARMUP_STEPS = 2
"""Untimed: the first step pays for allocation, kernel selection and compilation. Under
torch.compile the second recompiles once (the first call fills Python-side caches, such as
RoPE's cos/sin tables, that the compiled graph's guards check): 0.8 s against a steady
0.003 s for a 1-layer, d_model 32 model on CPU."""


@dataclass(frozen=True)
class RunCost:
    params: int
    active_params: int
    """What a token's forward multiplies by (MoE: k of E experts): FLOPs per token use it."""
    tokens: int
    flops_per_token: float
    train_seconds: float | None
    """None when the probe was skipped."""


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
    """Training seconds of all runs over the workers; None when the probe was skipped."""
    notes: tuple[ProtocolNote, ...]
    sequential: SequentialEstimate | None = None
    """With `--until-settled` or a sequential seed policy."""

    @property
    def total_runs(self) -> int:
        return len(self.runs)

    @property
    def mean_train_seconds(self) -> float | None:
        """The mean probed training time of one run; None without the probe."""
        seconds = [r.cost.train_seconds for r in self.runs if r.cost.train_seconds is not None]
        return sum(seconds) / len(seconds) if seconds else None

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


def vocab_size(plan: Plan) -> int:
    """The tokenizer's vocabulary (the trainer sets it on the model; BPE learns it here once)."""
    from archaudit.data.corpus import prepare_corpus

    return prepare_corpus(plan.spec.recipe).tokenizer.vocab_size


def estimate(plan: Plan, *, probe: bool = True, threads: int = 0) -> dict[str, RunCost]:
    """Cost of every run, keyed by its path."""
    from archaudit.model import training_flops_per_token

    vocab = vocab_size(plan)
    speed: dict[str, float] = {}  # scale → FLOPs per second of its baseline
    costs = {}
    for run in plan.runs:
        model = dataclasses.replace(run.model, vocab_size=vocab)
        params, active = model_sizes(model)
        flops = training_flops_per_token(model, active)
        if probe and run.scale not in speed:
            speed[run.scale] = flops * probe_tokens_per_s(model, run, threads)
        tokens = run.recipe.steps * run.recipe.batch_tokens
        seconds = tokens * flops / speed[run.scale] if probe else None
        costs[run.path] = RunCost(params, active, tokens, flops, seconds)
    return costs


def plan_summary(plan: Plan, *, probe: bool = True) -> PlanSummary:
    """Every run of `plan` with its cost, probed unless `probe` is False. The tracker is
    checked first, as `run` checks it before anything starts."""
    from archaudit.audit.executors import make_executor
    from archaudit.audit.trackers import check_tracker

    if plan.spec.tracker:
        check_tracker(plan.spec.tracker)
    pool = make_executor(plan.spec.executor, plan.audit_dir)
    costs = estimate(plan, probe=probe, threads=pool.threads)
    seconds = [c.train_seconds for c in costs.values() if c.train_seconds is not None]
    return PlanSummary(
        audit=plan.spec.name,
        audit_dir=str(plan.audit_dir),
        runs=tuple(CostedRun(run, costs[run.path]) for run in plan.runs),
        workers=pool.workers,
        estimated_wall_s=sum(seconds) / pool.workers if probe else None,
        notes=plan.notes,
    )


def probe_tokens_per_s(model_cfg: ModelConfig, run: RunSpec, threads: int) -> float:
    """Tokens per second of the run's training step on random tokens: `PROBE_STEPS` timed
    steps after `WARMUP_STEPS` untimed ones."""
    import torch

    from archaudit.model import build_model
    from archaudit.train import step as training
    from archaudit.train.distributed import World
    from archaudit.train.trainer import resolve_device

    if threads:
        torch.set_num_threads(threads)
    recipe = run.recipe
    device = resolve_device(recipe.device)
    training.set_matmul_precision(device)
    parts = training.build_training(build_model(model_cfg).to(device), recipe, device, World())
    n_seq = recipe.sequences_per_step(model_cfg.context_length) // recipe.grad_accumulation
    x = torch.randint(model_cfg.vocab_size, (n_seq, model_cfg.context_length), device=device)
    elapsed = 0.0
    for step in range(WARMUP_STEPS + PROBE_STEPS):
        start = time.perf_counter()
        training.train_step(parts, step, [(x, x)] * recipe.grad_accumulation)
        training.apply_update(parts)
        if device.type == "cuda":  # the step's own wall time
            torch.cuda.synchronize()
        if step >= WARMUP_STEPS:
            elapsed += time.perf_counter() - start
    return PROBE_STEPS * n_seq * recipe.grad_accumulation * model_cfg.context_length / elapsed


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
    from archaudit.stats.sequential import simulate_sequential

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
    """Runs spread over the workers; every round is a barrier of at least one run."""
    if seconds_per_run is None:
        return None
    return max(runs / max(workers, 1), rounds) * seconds_per_run
