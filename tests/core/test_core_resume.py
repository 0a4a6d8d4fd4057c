"""Exact resume after an interrupt at any phase of a step (torchtitan's loss_compare shape): the
run is interrupted in the forward pass, the backward pass, right after the optimizer update,
during validation, in a metrics hook or while saving, then rerun; its loss curve, events and
final weights must equal the uninterrupted run's exactly.

Two kinds of interrupt: a signal (SIGINT sent to this process) must let the step finish and save
it as itself; an exception raised inside the step must save nothing, so the rerun rolls back to
the newest checkpoint."""

from __future__ import annotations

import itertools
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from archaudit.config import ModelConfig, Recipe
from archaudit.rundir import (
    EVENTS,
    METRICS,
    TRAIN_RESULT,
    WEIGHTS,
    checkpoint_dirs,
    checkpoint_step,
)
from archaudit.train import checkpoint as ckpt
from archaudit.train import step as training_step
from archaudit.train import train
from archaudit.train.callbacks import LogRows
from archaudit.train.callbacks import validation as validation_callback
from archaudit.train.loop import trainer

MODEL = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=32)
RECIPE = Recipe(
    steps=12, batch_tokens=256, lr=3e-3, corpus_chars=100_000, eval_every=7, eval_batches=2,
    checkpoint_every=5, threads=1,
)  # fmt: skip
AT = 7  # the interrupt arrives during step 7 (validation runs there: eval_every = 7) ...
SAVE_AT = 10  # ... or, for the save phase, while step 10's checkpoint is written
PHASES = ("forward", "backward", "optimizer", "validation", "hook", "save")


def curve(run: Path) -> list[dict]:
    """Every metrics row except the wall-clock throughput."""
    rows = [json.loads(line) for line in (run / METRICS).read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "tokens_per_s"} for row in rows]


def events(run: Path) -> str:
    """The stability events (none at all in a calm run)."""
    path = run / EVENTS
    return path.read_text() if path.is_file() else ""


def final_weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(checkpoint_dirs(run)[-1] / WEIGHTS)


def instrument(monkeypatch: pytest.MonkeyPatch, phase: str, fire: Callable[[], None]) -> tuple:
    """Arrange for `fire()` to run inside `phase` of the interrupted step; returns the callbacks
    to pass to `train`."""
    calls = itertools.count(1)

    def at_step() -> None:
        if next(calls) == AT:
            fire()

    real_build, real_optimizer = trainer.build_model, training_step.make_optimizer
    real_validation, real_save = validation_callback.validation_loss, ckpt.save

    def build(cfg: ModelConfig) -> torch.nn.Module:
        model = real_build(cfg)
        if phase == "forward":
            model.register_forward_pre_hook(
                lambda module, args: at_step() if module.training else None
            )
        if phase == "backward":  # runs while autograd computes this parameter's gradient
            next(model.parameters()).register_hook(lambda grad: at_step())
        return model

    def optimizer(model: torch.nn.Module, recipe: Recipe) -> torch.optim.Optimizer:
        opt = real_optimizer(model, recipe)
        if phase == "optimizer":  # the weights already hold update AT
            opt.register_step_post_hook(lambda *_: at_step())
        return opt

    def validation(*args, **kwargs) -> float:
        if phase == "validation":
            fire()
        return real_validation(*args, **kwargs)

    def save(run_dir: Path, step: int, *args, **kwargs) -> Path:
        if phase == "save" and step == SAVE_AT:
            fire()
        return real_save(run_dir, step, *args, **kwargs)

    monkeypatch.setattr(trainer, "build_model", build)
    monkeypatch.setattr(training_step, "make_optimizer", optimizer)
    monkeypatch.setattr(validation_callback, "validation_loss", validation)
    monkeypatch.setattr(ckpt, "save", save)
    hook = LogRows(lambda row: fire() if row["step"] == AT else None)
    return (hook,) if phase == "hook" else ()


def send_sigint() -> None:
    os.kill(os.getpid(), signal.SIGINT)


def raise_interrupt() -> None:
    raise KeyboardInterrupt


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("whole") / "run"
    train(MODEL, RECIPE, run, seed=0)
    return run


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("interrupt", [send_sigint, raise_interrupt], ids=["signal", "raise"])
def test_interrupt_at_any_phase_resumes_to_the_uninterrupted_run(
    phase, interrupt, uninterrupted, tmp_path, monkeypatch
):
    run = tmp_path / "run"
    callbacks = instrument(monkeypatch, phase, interrupt)
    with pytest.raises(KeyboardInterrupt):
        train(MODEL, RECIPE, run, seed=0, callbacks=callbacks)
    monkeypatch.undo()

    stopped_in = SAVE_AT if phase == "save" else AT
    newest = checkpoint_step(checkpoint_dirs(run)[-1])
    if interrupt is send_sigint:  # the step finished and was saved as itself: nothing lost
        assert newest == stopped_in and len(curve(run)) == stopped_in
    else:  # the partial step saved nothing: the rerun rolls back to a periodic checkpoint
        assert newest < stopped_in and newest % RECIPE.checkpoint_every == 0

    resumed = train(MODEL, RECIPE, run, seed=0)
    assert curve(run) == curve(uninterrupted)
    assert events(run) == events(uninterrupted)
    whole, again = final_weights(uninterrupted), final_weights(run)
    assert whole.keys() == again.keys()
    assert all(torch.equal(whole[k], again[k]) for k in whole)
    assert (
        resumed.final_loss == json.loads((uninterrupted / TRAIN_RESULT).read_text())["final_loss"]
    )


def test_a_second_signal_stops_at_once_without_saving(tmp_path, monkeypatch):
    run = tmp_path / "run"
    callbacks = instrument(monkeypatch, "optimizer", lambda: (send_sigint(), send_sigint()))
    with pytest.raises(KeyboardInterrupt):
        train(MODEL, RECIPE, run, seed=0, callbacks=callbacks)
    assert [checkpoint_step(c) for c in checkpoint_dirs(run)] == [5]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "handler restored"
