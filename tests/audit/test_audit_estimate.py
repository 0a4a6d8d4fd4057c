"""`plan`'s cost estimate: its throughput probe times the trainer's own step (compiled,
activation-checkpointed and clipped as the recipe says), and its summary is a typed record that
round-trips through JSON."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch import nn

from archaudit.audit import estimate
from archaudit.audit.estimate import (
    PROBE_STEPS,
    WARMUP_STEPS,
    FixedCost,
    PlanSummary,
    SequentialCost,
    SequentialEstimate,
    plan_summary,
    probe_tokens_per_s,
)
from archaudit.audit.plan import make_plan
from archaudit.audit.spec import load_audit
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
    assert probe_tokens_per_s(model, run, threads=1) > 0
    assert spied_step == expected_calls(WARMUP_STEPS + PROBE_STEPS, model.n_layers)


def test_training_runs_the_same_step_the_probe_times(tmp_path: Path, spied_step: Counter):
    """The same spies see the same step in `train`: the function the probe calls, compiled,
    checkpointed and clipped the same way."""
    model = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=32)
    recipe = Recipe(
        steps=2, batch_tokens=256, grad_accumulation=ACCUMULATION, corpus_chars=60_000,
        eval_every=100, checkpoint_every=100, threads=1, **STEP_RECIPE,
    )  # fmt: skip
    train(model, recipe, tmp_path / "run")  # validation at the last step
    assert spied_step == expected_calls(recipe.steps, model.n_layers, recipe.eval_batches)


def test_the_probe_uses_no_step_of_its_own(monkeypatch: pytest.MonkeyPatch, write_audit):
    """Without the shared step the probe cannot time anything: it has no copy to fall back on."""

    def refuse(*args, **kwargs):
        raise AssertionError("the probe must build the trainer's step")

    monkeypatch.setattr(training_step, "build_training", refuse)
    run = make_plan(load_audit(write_audit())).runs[0]
    with pytest.raises(AssertionError, match="trainer's step"):
        probe_tokens_per_s(dataclasses.replace(run.model, vocab_size=64), run, threads=1)


def test_the_plan_summary_round_trips_through_json(write_audit):
    plan = make_plan(load_audit(write_audit(arms=["qk_norm", "switch_moe"])))
    summary = plan_summary(plan, probe=False)
    sequential = SequentialEstimate(
        metric="val_loss",
        effects_from="given",
        max_seeds=5,
        audits=1000,
        sequential=SequentialCost(expected_runs=14.9, power=0.95, expected_rounds=4.2, wall_s=None),
        fixed=FixedCost(seeds_per_arm=5, runs=20, power=0.95, wall_s=None),
    )
    for record in (summary, dataclasses.replace(summary, sequential=sequential)):
        document = json.loads(json.dumps(record.to_json()))
        assert PlanSummary.from_json(document) == record
    assert summary.total_runs == len(plan.runs) and summary.estimated_wall_s is None
    assert [costed.run for costed in summary.runs] == list(plan.runs)
    assert {n.rule for n in summary.notes} == {n.rule for n in plan.notes}


def test_the_summary_wall_time_is_the_probed_seconds_over_the_workers(
    monkeypatch: pytest.MonkeyPatch, write_audit
):
    monkeypatch.setattr(estimate, "probe_tokens_per_s", lambda model, run, threads: 1000.0)
    summary = plan_summary(make_plan(load_audit(write_audit(arms=["switch_moe"]))))
    seconds = [costed.cost.train_seconds for costed in summary.runs]
    assert all(s is not None and s > 0 for s in seconds)
    assert summary.estimated_wall_s == pytest.approx(sum(seconds) / summary.workers)
    assert summary.mean_train_seconds == pytest.approx(sum(seconds) / len(seconds))


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
    probe_tokens_per_s(dataclasses.replace(run.model, vocab_size=64), run, threads=1)
    assert len(compiled_at) == WARMUP_STEPS + PROBE_STEPS and compiled_at[0] > 0
    assert compiled_at[WARMUP_STEPS:] == [0] * PROBE_STEPS, compiled_at
