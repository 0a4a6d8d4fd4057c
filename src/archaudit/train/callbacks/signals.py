"""Instability signals in metrics.jsonl at the eval cadence (docs/stability.md).

At every evaluation the callback runs one held-out batch (validation's first) through the model
inside a `SignalCapture` and puts into the row one `signals` object: the largest attention
logit per layer, log Z of the output logits (mean and largest |log Z|), the RMS of each
sublayer's output, and the gradient-norm trend since the last evaluation (the least-squares
slope of ln ‖g‖ per step) with its largest value. `recipe.log_signals = false` leaves it out.
The gradient norms since the last evaluation are checkpointed, so a resumed run writes what the
uninterrupted one would have.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from archaudit.model import Transformer
from archaudit.model.signals import SignalCapture
from archaudit.train.callbacks import Callback, Row, StepState, Trainer
from archaudit.train.step import autocast

SIGNALS = "signals"
"""The metrics.jsonl key that holds them."""


class Signals(Callback):
    state_key: ClassVar[str] = "signals"

    def __init__(self) -> None:
        self.grad_norms: list[float] = []

    def record(self, trainer: Trainer, state: StepState, row: Row) -> None:
        grad_norm = row["grad_norm"]
        if math.isfinite(grad_norm) and grad_norm > 0:
            self.grad_norms.append(grad_norm)

    @torch.no_grad()
    def at_eval(self, trainer: Trainer, row: Row) -> None:
        model, run = trainer.model, trainer.run
        assert isinstance(model, Transformer)
        x, _ = trainer.val_data.batch((0,), trainer.micro)
        model.eval()
        with SignalCapture(model) as capture, autocast(run.device, run.recipe):
            model(x.to(run.device))
        model.train()
        signals = capture.signals().to_json()
        signals["grad_norm_slope"] = log_slope(self.grad_norms)
        signals["grad_norm_max"] = max(self.grad_norms, default=math.nan)
        row[SIGNALS] = {k: _finite(v) for k, v in signals.items()}
        self.grad_norms = []

    def state_dict(self) -> dict[str, Any]:
        return {"grad_norms": list(self.grad_norms)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.grad_norms = list(state["grad_norms"])


def log_slope(values: Sequence[float]) -> float:
    """Least-squares slope of ln(value) per step over consecutive steps (NaN for < 2 values).
    numpy only: scipy (via `archaudit.stats.analyses`) stays off the run's imports."""
    if len(values) < 2:
        return math.nan
    y = np.log(np.asarray(values, dtype=float))
    return float(np.polyfit(np.arange(len(y), dtype=float), y, 1)[0])


def _finite(value: Any) -> Any:
    """JSON has no NaN: a value that is not a finite number is written as null."""
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value if not isinstance(value, float) or math.isfinite(value) else None
