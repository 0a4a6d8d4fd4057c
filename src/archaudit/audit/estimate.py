"""What a plan costs: parameters and tokens per run, and training time from a short probe.

The probe times a few optimizer steps of each scale's baseline on random tokens (after one
warm-up step) and scales the other arms by their training FLOPs per token, so a plan of many
arms costs one probe per scale. Evaluation time is not included.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from archaudit.audit.plan import Plan, RunSpec, model_sizes
from archaudit.config import ModelConfig

PROBE_STEPS = 2


@dataclass(frozen=True)
class RunCost:
    params: int
    active_params: int
    """What a token's forward multiplies by (MoE: k of E experts): FLOPs per token use it."""
    tokens: int
    flops_per_token: float
    train_seconds: float | None
    """None when the probe was skipped."""


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


def plan_summary(plan: Plan, *, probe: bool = True) -> dict[str, Any]:
    """The plan for machines (`archaudit plan --json`): every run with its cost, the workers
    of the audit's executor and the estimated wall time of training."""
    from archaudit.audit.executors import make_executor
    from archaudit.audit.trackers import check_tracker

    if plan.spec.tracker:  # as `run` checks it, before anything starts
        check_tracker(plan.spec.tracker)
    pool = make_executor(plan.spec.executor, plan.audit_dir)
    costs = estimate(plan, probe=probe, threads=pool.threads)
    seconds = [c.train_seconds for c in costs.values() if c.train_seconds is not None]
    return {
        "audit": plan.spec.name,
        "audit_dir": str(plan.audit_dir),
        "runs": [run.to_json() | dataclasses.asdict(costs[run.path]) for run in plan.runs],
        "total_runs": len(plan.runs),
        "workers": pool.workers,
        "estimated_wall_s": sum(seconds) / pool.workers if probe else None,
        "notes": [note.to_json() for note in plan.notes],
    }


def probe_tokens_per_s(model_cfg: ModelConfig, run: RunSpec, threads: int) -> float:
    import torch

    from archaudit.model import build_model
    from archaudit.train.optim import make_optimizer
    from archaudit.train.trainer import autocast, resolve_device

    if threads:
        torch.set_num_threads(threads)
    recipe = run.recipe
    device = resolve_device(recipe.device)
    model = build_model(model_cfg).to(device)
    optimizer = make_optimizer(model, recipe)
    n_seq = recipe.sequences_per_step(model_cfg.context_length) // recipe.grad_accumulation
    shape = (n_seq, model_cfg.context_length)
    x = torch.randint(model_cfg.vocab_size, shape, device=device)
    elapsed = 0.0
    for step in range(PROBE_STEPS + 1):
        start = time.perf_counter()
        for _ in range(recipe.grad_accumulation):
            with autocast(device, recipe):
                loss = model(x, targets=x)
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step:  # the first step pays for allocation and kernel selection
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
) -> dict[str, Any]:
    """Expected runs (and wall time) of `run --until-settled` next to the fixed design with the
    same power, from simulations of the closed loop per (baseline, scale) family.

    `effects` are planted on the first arms of each family, in σ (in metric units when `sigma`
    is given). Without them a pilot (results already in the audit directory) supplies every
    arm's observed Δ/σ on the first primary metric; with neither, every arm is null.
    """
    from archaudit.audit.sequential import (
        families,
        pilot_effects,
        primary_metrics,
        sequential_rule,
        settle_options,
    )
    from archaudit.stats.sequential import simulate_sequential

    options = settle_options(plan, max_seeds=max_seeds)
    primaries = primary_metrics(plan, options)
    rule = sequential_rule(plan, options, len(primaries))
    metric = primaries[0]
    planted = [e / sigma for e in effects] if sigma else [float(e) for e in effects]
    pilot = {} if planted else pilot_effects(plan, metric)
    seq_runs = fixed_runs = rounds = 0.0
    seq_found = fixed_found = planted_arms = 0.0
    fixed_seeds = 0
    for family in families(plan, (metric,)):
        arms = family.arms
        if pilot:
            drawn = tuple(pilot.get((arm, family.scale), 0.0) for arm in arms)
        else:
            drawn = tuple(planted[: len(arms)])
        sims = [
            simulate_sequential(
                arms=len(arms), rule=rule, audits=audits, effects=drawn, fixed_seeds=k, seed=seed
            )
            for k in range(1, 2 * rule.max_seeds + 1)
        ]
        sim = sims[0]
        # the fixed design with the same power: the fewest seeds per arm that reach it
        same = next((s for s in sims if s.fixed_power_planted >= sim.power_planted), sims[-1])
        fixed_seeds = max(fixed_seeds, same.fixed_seeds)
        seq_runs += sim.runs_mean
        rounds = max(rounds, sim.rounds_mean)
        fixed_runs += same.fixed_runs
        count = sum(1 for e in drawn if e != 0.0)
        planted_arms += count
        seq_found += count * (sim.power_planted if count else 0.0)
        fixed_found += count * (same.fixed_power_planted if count else 0.0)

    def wall(runs: float, rounds: float = 1.0) -> float | None:
        """Runs spread over the workers; every round is a barrier of at least one run."""
        if seconds_per_run is None:
            return None
        return max(runs / max(workers, 1), rounds) * seconds_per_run

    return {
        "metric": metric,
        "effects_from": "pilot" if pilot else ("given" if planted else "null"),
        "max_seeds": rule.max_seeds,
        "audits": audits,
        "sequential": {
            "expected_runs": seq_runs,
            "power": seq_found / planted_arms if planted_arms else None,
            "expected_rounds": rounds,
            "wall_s": wall(seq_runs, rounds),
        },
        "fixed": {
            "seeds_per_arm": fixed_seeds,
            "runs": fixed_runs,
            "power": fixed_found / planted_arms if planted_arms else None,
            "wall_s": wall(fixed_runs),
        },
    }
