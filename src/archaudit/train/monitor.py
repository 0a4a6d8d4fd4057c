"""Stability monitor: spikes, divergence and the slow climb of the gradient norm.

- Spike: a value above the rolling mean of the last `window` values by `n_std` standard
  deviations (OLMo-core's rule: 128 values, 6σ). Checked for the loss and the gradient norm.
- Rising gradient norm: its exponential moving average grew at ≥ 90% of the last `rise_window`
  steps and by ≥ 50% overall — the early sign of divergence (R7). Reported once per episode.
- Divergence: a NaN or Inf loss or gradient norm; the trainer then stops the run cleanly.
- Router collapse (MoE): one expert is chosen by ≥ `collapse_share` of a layer's tokens (90%:
  the layer has become one dense MLP with idle experts). Reported when a layer enters it.
The state is a plain dict saved in every checkpoint, so a resumed run flags exactly what the
uninterrupted one would have.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StabilityMonitor:
    window: int = 128
    n_std: float = 6.0
    min_history: int = 16
    rise_window: int = 100
    ema: float = 0.9
    history: dict[str, deque[float]] = field(default_factory=dict)
    grad_ema: float | None = None
    rises: deque[int] = field(default_factory=deque)
    ema_start: deque[float] = field(default_factory=deque)
    rising: bool = False
    collapse_share: float = 0.9
    collapsed: list[int] = field(default_factory=list)

    def observe(self, step: int, loss: float, grad_norm: float) -> list[dict[str, Any]]:
        """Record one step; return the events it raised (each a JSON-ready dict)."""
        if not (math.isfinite(loss) and math.isfinite(grad_norm)):
            return [
                {
                    "step": step,
                    "event": "diverged",
                    "loss": _num(loss),
                    "grad_norm": _num(grad_norm),
                }
            ]
        events = [
            {"step": step, "event": "spike", "metric": name, "value": value, **stats}
            for name, value in (("loss", loss), ("grad_norm", grad_norm))
            if (stats := self._spike(name, value))
        ]
        events += self._rise(step, grad_norm)
        return events

    def observe_routing(self, step: int, top_shares: list[float]) -> list[dict[str, Any]]:
        """One step's share of tokens choosing each MoE layer's most chosen expert."""
        now = [layer for layer, share in enumerate(top_shares) if share >= self.collapse_share]
        events = [
            {
                "step": step,
                "event": "router_collapse",
                "layer": layer,
                "top_expert_share": top_shares[layer],
                "threshold": self.collapse_share,
            }
            for layer in now
            if layer not in self.collapsed
        ]
        self.collapsed = now
        return events

    def _spike(self, name: str, value: float) -> dict[str, float] | None:
        past = self.history.setdefault(name, deque(maxlen=self.window))
        verdict = None
        if len(past) >= self.min_history:
            mean = sum(past) / len(past)
            std = math.sqrt(sum((v - mean) ** 2 for v in past) / (len(past) - 1))
            if value > mean + self.n_std * std:
                verdict = {"mean": mean, "std": std}
        past.append(value)
        return verdict

    def _rise(self, step: int, grad_norm: float) -> list[dict[str, Any]]:
        prev = self.grad_ema
        self.grad_ema = grad_norm if prev is None else self.ema * prev + (1 - self.ema) * grad_norm
        if prev is None:
            return []
        self.rises.append(int(self.grad_ema > prev))
        self.ema_start.append(prev)
        if len(self.rises) > self.rise_window:
            self.rises.popleft()
            self.ema_start.popleft()
        full = len(self.rises) == self.rise_window
        climbing = (
            full
            and sum(self.rises) >= 0.9 * self.rise_window
            and (self.grad_ema >= 1.5 * self.ema_start[0])
        )
        event = []
        if climbing and not self.rising:
            event = [
                {
                    "step": step,
                    "event": "grad_norm_rising",
                    "from": self.ema_start[0],
                    "to": self.grad_ema,
                    "window": self.rise_window,
                }
            ]
        self.rising = climbing
        return event

    def state_dict(self) -> dict[str, Any]:
        return {
            "history": {k: list(v) for k, v in self.history.items()},
            "grad_ema": self.grad_ema,
            "rises": list(self.rises),
            "ema_start": list(self.ema_start),
            "rising": self.rising,
            "collapsed": list(self.collapsed),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.history = {k: deque(v, maxlen=self.window) for k, v in state["history"].items()}
        self.grad_ema = state["grad_ema"]
        self.rises = deque(state["rises"])
        self.ema_start = deque(state["ema_start"])
        self.rising = state["rising"]
        self.collapsed = list(state.get("collapsed", []))  # absent in checkpoints before MoE


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)
