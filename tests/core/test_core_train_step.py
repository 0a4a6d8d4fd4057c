"""The trainer's loop around the shared step: the loss all-reduce carries the signal flag that
`stop_now` goes by, and a diverged step is never applied."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import torch

from archaudit.config import ModelConfig, Recipe
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
    applied: list[int] = []
    real = training_step.apply_update

    def update(parts: training_step.TrainingParts) -> None:
        applied.append(len(applied) + 1)
        real(parts)

    monkeypatch.setattr(training_step, "apply_update", update)
    model = ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=32)
    recipe = Recipe(
        steps=30, batch_tokens=256, lr=1e6, warmup_frac=0.0, corpus_chars=60_000,
        eval_every=100, checkpoint_every=100, threads=1,
    )  # fmt: skip
    result = train(model, recipe, tmp_path / "run")
    assert result.status == "diverged" and result.diverged_step is not None
    assert applied == list(range(1, result.diverged_step))
