"""The trainer's loop around the shared step: the loss all-reduce carries the signal flag that
`stop_now` goes by, and a diverged step is never applied (skipped on the device, no host sync)."""

from __future__ import annotations

import copy
import signal
from pathlib import Path

import pytest
import torch

from archaudit.config import ModelConfig, Recipe
from archaudit.model import build_model
from archaudit.train import step as training_step
from archaudit.train import train
from archaudit.train.distributed import World, mean_loss_over_ranks
from archaudit.train.interrupts import SignalsAtStepEnd


def test_with_several_ranks_stop_now_goes_by_the_all_reduce():
    signals = SignalsAtStepEnd(World(rank=0, size=2))
    assert signals.stop_now() is None
    signals.agree(True)  # another rank was signalled, this one was not
    assert signals.stop_now() == "a signal on another rank"
    signals.received = signal.SIGTERM
    signals.agree(False)  # a signal after this step's all-reduce waits for the next one
    assert signals.stop_now() is None


def test_on_one_process_stop_now_sees_a_signal_at_once():
    signals = SignalsAtStepEnd(World())
    signals.agree(False)
    signals.received = signal.SIGINT  # e.g. during the save after the all-reduce
    assert signals.stop_now() == "SIGINT"


def test_one_process_reduces_nothing():
    assert mean_loss_over_ranks(torch.tensor(2.5), True, World()) == (2.5, True)


def test_a_diverged_step_is_never_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Every update from the diverged step on is skipped on the device (the flag is set when
    its loss or gradient norm is not finite), and the run stops at that step."""
    applied: list[bool] = []
    real = training_step.apply_update

    def update(parts: training_step.TrainingParts, skip: torch.Tensor | None = None) -> None:
        applied.append(skip is None or float(skip) == 0.0)
        real(parts, skip)

    monkeypatch.setattr(training_step, "apply_update", update)
    model = ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=32)
    recipe = Recipe(
        steps=30, batch_tokens=256, lr=1e6, warmup_frac=0.0, corpus_chars=60_000,
        eval_every=100, checkpoint_every=100, threads=1,
    )  # fmt: skip
    result = train(model, recipe, tmp_path / "run")
    assert result.status == "diverged" and result.diverged_step is not None
    first_skipped = applied.index(False) + 1
    assert first_skipped == result.diverged_step and not any(applied[first_skipped:])


def test_a_skipped_update_leaves_weights_and_optimizer_state_as_they_were():
    model = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=16, vocab_size=64)
    recipe = Recipe(steps=4, batch_tokens=64, threads=1)
    parts = training_step.build_training(build_model(model), recipe, torch.device("cpu"), World())
    x = torch.randint(64, (4, 16))
    for step, skip in enumerate((0.0, 1.0)):
        before = copy.deepcopy((parts.model.state_dict(), parts.optimizer.state_dict()))
        training_step.train_step(parts, step, [(x, x)])
        training_step.apply_update(parts, torch.tensor(skip))
    weights, optimizer = before
    assert all(torch.equal(weights[k], v) for k, v in parts.model.state_dict().items())
    after = parts.optimizer.state_dict()["state"]
    assert all(
        torch.equal(optimizer["state"][i][key], after[i][key]) for i in after for key in after[i]
    )
