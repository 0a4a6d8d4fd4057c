"""How long `plan` probes before it estimates the rest from FLOPs (issue 57).

A first `plan` of a 20-arm audit has 42 (arm, scale) pairs to time: 15 minutes on an idle
2-core machine, more than an hour at a load of 16. `plan` probes for at most `--probe-budget`
seconds (`DEFAULT_PROBE_BUDGET`), most useful first: each scale's whole run (start-up, steps,
validation, a checkpoint, the suite; the first scale's always, so that every estimate stands
on one measurement), then the audit's own start and the loop's costs, then each arm's training
step. What the budget leaves out is estimated from FLOPs against what was measured, in the same
breath's reference units, and marked ≈ wherever it is shown: a scale's parts from a measured
scale's times its training FLOPs per step (its checkpoint by its parameters), an arm's step from
its scale's measured step times its FLOPs per token over the probed model's. Every measurement
is cached, so the next `plan` spends its budget on the pairs still estimated.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line reads DEFAULT_PROBE_BUDGET without importing torch
    from archaudit.audit.plan import RunSpec
    from archaudit.audit.probe import ShapeCost, Timed

DEFAULT_PROBE_BUDGET = 60.0
"""Seconds of probing a `plan` spends at most (past its first scale's measurement)."""


@dataclass
class ProbeBudget:
    """`seconds` of probing, counted from the first measurement asked for; a probe starts only
    when its estimated time fits in what is left (`allows`), except one that `must` run."""

    seconds: float = DEFAULT_PROBE_BUDGET
    started: float | None = field(default=None, compare=False)
    skipped: int = 0
    """Probes left out for the budget (their pairs estimated from FLOPs)."""

    def allows(self, estimate: float, *, must: bool = False) -> bool:
        """Whether a probe estimated at `estimate` seconds fits in what is left (always when
        `must`, never with a budget of 0); counts a refusal in `skipped`."""
        if self.started is None:
            self.started = time.perf_counter()
        if self.seconds <= 0:
            self.skipped += 1
            return False
        spent = time.perf_counter() - self.started
        if must or spent + estimate <= self.seconds:
            return True
        self.skipped += 1
        return False


def _flops_per_step(run: RunSpec) -> float:
    from archaudit.audit.plan import model_sizes
    from archaudit.model import training_flops_per_token

    flops = training_flops_per_token(run.model, model_sizes(run.model)[1])
    return flops * run.recipe.batch_tokens


def step_ratio_from_flops(run: RunSpec, probed: RunSpec) -> float:
    """`run`'s training step over `probed`'s (same scale), estimated by their FLOPs per step."""
    return _flops_per_step(run) / _flops_per_step(probed)


def shape_from_flops(shape: ShapeCost, probed: RunSpec, run: RunSpec) -> ShapeCost:
    """`run`'s scale's parts estimated from `probed`'s measured `shape`: the compute (steps,
    warm-up, validation, suite) by their training FLOPs per step, the checkpoint by their
    parameters."""
    from archaudit.audit.plan import model_sizes
    from archaudit.audit.probe import ShapeCost

    compute = _flops_per_step(run) / _flops_per_step(probed)
    params = model_sizes(run.model)[0] / max(model_sizes(probed.model)[0], 1)
    parts = {f.name: getattr(shape, f.name) for f in dataclasses.fields(shape)}
    scaled: dict[str, Timed] = {
        name: value * (params if name == "save" else compute) for name, value in parts.items()
    }
    return ShapeCost(**scaled)


def nearest_scale(run: RunSpec, measured: dict[str, RunSpec]) -> str:
    """The scale of `measured` (by name, its probed run) whose FLOPs per step are nearest
    `run`'s (by ratio): the best anchor for `shape_from_flops`."""

    own = _flops_per_step(run)
    return min(measured, key=lambda s: abs(math.log(_flops_per_step(measured[s]) / own)))
