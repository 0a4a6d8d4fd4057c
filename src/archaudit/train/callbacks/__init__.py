"""Callbacks: what the trainer does around its step, each a small object with hooks (OLMo-core's
`Callback`). The loop (`Trainer.fit`) runs the step and calls the hooks; the stability monitor,
MoE routing, validation, checkpointing and the trackers are callbacks.

A step's values stay on the device: `post_step` sees them as tensors and must not read them.
Every `LOG_EVERY` steps, at every evaluation and checkpoint step, at the last step and on a
signal, the trainer reads the pending steps' values in one transfer and, step by step in order,
builds each metrics row and calls `record`; at an evaluation step then `at_eval`; writes the row
to metrics.jsonl and calls `log`. After the rows it calls `post_log` (checkpointing).

    class MaxLogit(Callback):
        def at_eval(self, trainer, row):  # every recipe.eval_every steps and the last
            row["max_logit"] = measure(trainer.model, trainer.val_data)  # the plain module

A callback with a `state_key` has its `state_dict` saved in every checkpoint (meta.json) and
restored on resume, so a resumed run records exactly what the uninterrupted one would have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import torch
from torch import nn

from archaudit.data.sampler import BatchSampler
from archaudit.train.run import RunInputs, TrainResult

Row = dict[str, Any]
"""One step's metrics row: JSON-ready host values, written to metrics.jsonl in key order."""


class Trainer(Protocol):
    """What callbacks see of the trainer (`trainer.Trainer`)."""

    run: RunInputs
    val_data: BatchSampler
    """Held-out batches: `val_data.batch((i,), micro)`."""
    micro: int
    """Sequences per micro-batch on this rank."""

    @property
    def model(self) -> nn.Module:
        """The plain module (not parallelised or compiled)."""
        ...

    def append_events(self, events: list[dict[str, Any]]) -> None:
        """Add stability events to events.jsonl (rank 0 writes)."""

    def diverge(self, step: int, detail: str) -> None:
        """Stop the run at `step`: its row and those after it are never written."""

    def save(self, step: int) -> None:
        """Checkpoint the run as it stands after `step` (every rank calls this)."""


@dataclass(frozen=True)
class StepState:
    """One finished step as the device holds it (read only at the log cadence)."""

    step: int
    """Updates done, counting this one: the metrics row's `step`."""
    loss: torch.Tensor
    """The mean loss over the step's micro-batches and the ranks."""
    grad_norm: torch.Tensor
    """The total gradient norm before clipping."""
    lr: float
    kept: dict[str, Any] = field(default_factory=dict)
    """What `post_step` hooks keep (device tensors) for their `record`, by callback."""


class Callback:
    """Hooks the trainer calls; each does nothing unless overridden."""

    state_key: ClassVar[str] = ""
    """Non-empty: the key of this callback's state in checkpoints."""

    def pre_train(self, trainer: Trainer) -> None:
        """Once, after the model is built and restored, before the first step."""

    def post_step(self, trainer: Trainer, state: StepState) -> None:
        """Every step, after its update. Keep tensors in `state.kept`; reading one (`float`,
        `.item()`, `.tolist()`) would cost a host sync per step."""

    def record(self, trainer: Trainer, state: StepState, row: Row) -> None:
        """At the log cadence, for each pending step in order: add host values to its row.
        A run that `trainer.diverge`s here stops before the row is written."""

    def at_eval(self, trainer: Trainer, row: Row) -> None:
        """At an evaluation step (every `recipe.eval_every` and the last), after `record`:
        add evaluation fields to the row. `trainer.model` is the plain module, in train mode
        (set `eval()` and back as validation does)."""

    def log(self, row: Row) -> None:
        """Each finished row, once it is in metrics.jsonl (rank 0's trackers, tests)."""

    def post_log(self, trainer: Trainer, step: int) -> None:
        """After the rows up to `step` are written; the checkpoint is saved here."""

    def post_train(self, trainer: Trainer, result: TrainResult) -> None:
        """Once, with the run's result, before train.json is written."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned."""


class LogRows(Callback):
    """Hand every finished metrics row to a function (a tracker's `log`)."""

    def __init__(self, log: Callable[[Row], None]) -> None:
        self._log = log

    def log(self, row: Row) -> None:
        self._log(row)
