"""The trainer's callbacks: a caller's callback adds fields at the evaluation cadence, sees each
step's values as device tensors, and keeps state across a resume; the values are read at the
log cadence only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from archaudit.config import ModelConfig, Recipe
from archaudit.rundir import CHECKPOINT_META, METRICS, checkpoint_dirs
from archaudit.train import train
from archaudit.train.callbacks import Callback, Row, StepState
from archaudit.train.loop.trainer import Trainer

MODEL = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=32)
RECIPE = Recipe(
    steps=12, batch_tokens=256, lr=3e-3, corpus_chars=60_000, eval_every=4, eval_batches=1,
    checkpoint_every=6, threads=1,
)  # fmt: skip


class WeightNorm(Callback):
    """Logs the embedding's norm at every evaluation; counts steps in its checkpointed state."""

    state_key = "weight_norm"

    def __init__(self) -> None:
        self.steps = 0
        self.kinds: set[type] = set()

    def post_step(self, trainer: Trainer, state: StepState) -> None:
        self.steps += 1
        self.kinds |= {type(state.loss), type(state.grad_norm)}

    def at_eval(self, trainer: Trainer, row: Row) -> None:
        row["embedding_norm"] = float(next(trainer.model.parameters()).detach().norm())
        row["steps_seen"] = self.steps

    def state_dict(self) -> dict[str, Any]:
        return {"steps": self.steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.steps = state["steps"]


def rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / METRICS).read_text().splitlines()]


def test_a_callback_logs_at_the_eval_cadence_and_keeps_its_state(tmp_path: Path):
    callback = WeightNorm()
    train(MODEL, RECIPE, tmp_path / "run", callbacks=(callback,))
    logged = [r for r in rows(tmp_path / "run") if "embedding_norm" in r]
    assert [r["step"] for r in logged] == [4, 8, 12]
    assert [r["steps_seen"] for r in logged] == [4, 8, 12]
    assert all(
        list(r)[-4:] == ["val_loss", "signals", "embedding_norm", "steps_seen"] for r in logged
    )
    assert callback.kinds == {torch.Tensor}  # device values, not read per step
    meta = json.loads((checkpoint_dirs(tmp_path / "run")[-1] / CHECKPOINT_META).read_text())
    assert meta["weight_norm"] == {"steps": 12} and "monitor" in meta


def test_a_resumed_run_restores_the_callbacks_state(tmp_path: Path):
    class StopAfter(Callback):
        def log(self, row: Row) -> None:
            if row["step"] == 7:
                raise RuntimeError("stopped by the test")

    with pytest.raises(RuntimeError, match="stopped by the test"):
        train(MODEL, RECIPE, tmp_path / "run", callbacks=(WeightNorm(), StopAfter()))
    resumed = WeightNorm()
    train(MODEL, RECIPE, tmp_path / "run", callbacks=(resumed,))
    assert resumed.steps == 12  # 6 restored from the checkpoint + 6 trained
    assert [r["step"] for r in rows(tmp_path / "run")] == list(range(1, 13))


def test_step_values_are_read_at_the_log_cadence_only(tmp_path, monkeypatch):
    reads: list[int] = []
    real = Trainer.settle

    def settle(self: Trainer, bar: Any) -> bool:
        reads.append(self.pending[-1].state.step)
        return real(self, bar)

    monkeypatch.setattr(Trainer, "settle", settle)
    recipe = Recipe(
        steps=25, batch_tokens=256, corpus_chars=60_000, eval_every=100, checkpoint_every=100,
        eval_batches=1, threads=1,
    )  # fmt: skip
    train(MODEL, recipe, tmp_path / "run")
    assert reads == [10, 20, 25]  # LOG_EVERY, then the last step
    assert [r["step"] for r in rows(tmp_path / "run")] == list(range(1, 26))
