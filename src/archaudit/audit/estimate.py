"""What a plan costs: parameters and tokens per run, and training time from a short probe.

The probe times a few optimizer steps of each scale's baseline on random tokens (after one
warm-up step) and scales the other arms by their training FLOPs per token, so a plan of many
arms costs one probe per scale. Evaluation time is not included.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from archaudit.audit.plan import Plan, RunSpec, check_model
from archaudit.config import ModelConfig

PROBE_STEPS = 2


@dataclass(frozen=True)
class RunCost:
    params: int
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
        params = check_model(model)
        flops = training_flops_per_token(model, params)
        if probe and run.scale not in speed:
            speed[run.scale] = flops * probe_tokens_per_s(model, run, threads)
        tokens = run.recipe.steps * run.recipe.batch_tokens
        seconds = tokens * flops / speed[run.scale] if probe else None
        costs[run.path] = RunCost(params, tokens, flops, seconds)
    return costs


def plan_summary(plan: Plan, *, probe: bool = True) -> dict[str, Any]:
    """The plan for machines (`archaudit plan --json`): every run with its cost, the workers
    of the audit's executor and the estimated wall time of training."""
    from archaudit.audit.executors import make_executor

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
