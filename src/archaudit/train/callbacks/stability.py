"""The stability monitor as a callback: each recorded step's spikes, rising gradient norm,
router collapse and divergence go to events.jsonl; a divergence stops the run."""

from __future__ import annotations

from typing import Any

from archaudit.train.callbacks import Callback, Row, StepState, Trainer
from archaudit.train.monitor import StabilityMonitor


class Stability(Callback):
    """`StabilityMonitor` on the rows' loss, gradient norm and MoE top-expert shares. Its state
    is in every checkpoint (key `monitor`)."""

    state_key = "monitor"

    def __init__(self) -> None:
        self.monitor = StabilityMonitor()

    def record(self, trainer: Trainer, state: StepState, row: Row) -> None:
        step, loss, grad_norm = row["step"], row["loss"], row["grad_norm"]
        events = self.monitor.observe(step, loss, grad_norm)
        events += self.monitor.observe_routing(step, row.get("moe_top_share", []))
        trainer.append_events(events)
        if any(e["event"] == "diverged" for e in events):
            trainer.diverge(step, f"loss {loss}, grad norm {grad_norm}")

    def state_dict(self) -> dict[str, Any]:
        return self.monitor.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.monitor.load_state_dict(state)
