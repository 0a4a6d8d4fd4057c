"""Instability signals in metrics.jsonl at the eval cadence (docs/stability.md).

At every validation the trainer runs the held-out batches inside a `SignalCapture`, so the
signals cost no forward pass of their own: the largest attention logit per layer, log Z of the
output logits, the RMS of each sublayer's output, and the gradient-norm trend since the last
validation (the slope of ln ‖g‖ per step, a least-squares fit over those steps). They go into
the row as one `signals` object; `recipe.log_signals = false` leaves them out.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archaudit.model import Transformer
from archaudit.model.signals import SignalCapture
from archaudit.stats.stability import log_slope

SIGNALS = "signals"
"""The metrics.jsonl key that holds them."""


@dataclass
class SignalLog:
    """The gradient norms since the last validation, and the capture around a validation."""

    grad_norms: list[float] = field(default_factory=list)

    def observe(self, grad_norm: float) -> None:
        if math.isfinite(grad_norm) and grad_norm > 0:
            self.grad_norms.append(grad_norm)

    def resume(self, metrics: Path) -> None:
        """Take the gradient norms logged since the last validation (a resumed run then writes
        the trend the uninterrupted one would have)."""
        rows = read_rows(metrics)
        since = next((i for i in range(len(rows) - 1, -1, -1) if "val_loss" in rows[i]), -1)
        self.grad_norms = []
        for row in rows[since + 1 :]:
            self.observe(float(row["grad_norm"]))

    @contextlib.contextmanager
    def capture(self, model: Transformer, row: dict[str, Any]) -> Iterator[None]:
        """Capture the forward passes run inside, then put the signals into `row`."""
        with SignalCapture(model) as capture:
            yield
        signals = capture.signals().to_json()
        signals["grad_norm_slope"] = log_slope(self.grad_norms)
        signals["grad_norm_max"] = max(self.grad_norms, default=math.nan)
        row[SIGNALS] = {k: _finite(v) for k, v in signals.items()}
        self.grad_norms.clear()


def read_rows(metrics: Path) -> list[dict[str, Any]]:
    """The rows of a metrics.jsonl (none when absent)."""
    if not metrics.is_file():
        return []
    return [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]


def _finite(value: Any) -> Any:
    """JSON has no NaN: a value that is not a finite number is written as null."""
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value if not isinstance(value, float) or math.isfinite(value) else None
