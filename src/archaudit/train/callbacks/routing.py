"""MoE routing per step: each MoE layer's load, top-expert share, dropped share and router
entropy in the metrics row (none without MoE layers)."""

from __future__ import annotations

from archaudit.model.moe import moe_stats, routing_metrics
from archaudit.train.callbacks import Callback, Row, StepState, Trainer


class Routing(Callback):
    """Keeps the step's routing statistics (device tensors) and records them as row fields.
    Before `Stability`, which watches the rows' `moe_top_share` for router collapse."""

    def post_step(self, trainer: Trainer, state: StepState) -> None:
        stats = moe_stats(trainer.model)
        if stats:
            state.kept["routing"] = stats

    def record(self, trainer: Trainer, state: StepState, row: Row) -> None:
        row |= routing_metrics(state.kept.get("routing", []))
