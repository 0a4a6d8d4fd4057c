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

The budget counts from the `plan` command's start, its imports and grid included, and binds
every probe: on a loaded machine a first `plan` would otherwise spend minutes on the start-up
and the first scale alone (19 CPU-seconds, 262 s of wall at a load of 19, issue 57). A probe
starts only when its estimated time (in reference steps timed now, so longer on a loaded
machine) fits in what is left. What no probe measured is estimated from the reference
step timed now (`from_reference`): a run's start, the audit's start, the loop's judgement and a
scale's parts in reference steps (`REFERENCE_COSTS`, each measured in reference steps at a
load of about 20: `benchmarks/plan_parts.py`), marked ≈ like the rest.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line reads DEFAULT_PROBE_BUDGET without importing torch
    from archaudit.audit.grid.plan import RunSpec
    from archaudit.audit.planning.probe import LoopCost, ShapeCost, Timed

DEFAULT_PROBE_BUDGET = 60.0
"""Seconds from a `plan`'s start after which it starts no probe."""


@dataclass
class ProbeBudget:
    """`seconds` of a plan's time for probing, counted from `started` (the command's start;
    else the first measurement asked for); a probe starts only when its estimated time fits in
    what is left (`allows`)."""

    seconds: float = DEFAULT_PROBE_BUDGET
    started: float | None = field(default=None, compare=False)
    skipped: int = 0
    """Probes left out for the budget (their pairs estimated from FLOPs)."""

    def allows(self, estimate: float) -> bool:
        """Whether a probe estimated at `estimate` seconds fits in what is left (never with a
        budget of 0); counts a refusal in `skipped`."""
        if self.started is None:
            self.started = time.perf_counter()
        if self.seconds <= 0:
            self.skipped += 1
            return False
        spent = time.perf_counter() - self.started
        if spent + estimate <= self.seconds:
            return True
        self.skipped += 1
        return False


def _flops_per_step(run: RunSpec) -> float:
    from archaudit.audit.grid.plan import model_sizes
    from archaudit.model import training_flops_per_token

    flops = training_flops_per_token(run.model, model_sizes(run.model)[1])
    return flops * run.recipe.batch_tokens


def _forward_flops_per_item(run: RunSpec) -> float:
    """One suite item's forward pass at most: a context window's tokens at a third of the
    training FLOPs per token (forward, no backward)."""
    from archaudit.audit.grid.plan import model_sizes
    from archaudit.model import training_flops_per_token

    flops = training_flops_per_token(run.model, model_sizes(run.model)[1])
    return flops / 3 * run.model.context_length


def suite_items(run: RunSpec) -> int:
    """The items `run`'s suite scores: each task's limit (the run's `eval.limit` when set)."""
    from archaudit.audit.planning.probe import SUITE_PROBE_ITEMS
    from archaudit.evals.suites import load_suite

    if not run.suite:
        return 0
    tasks = load_suite(run.suite).tasks
    return sum(run.eval_limit or spec.limit or SUITE_PROBE_ITEMS for spec in tasks)


def step_ratio_from_flops(run: RunSpec, probed: RunSpec) -> float:
    """`run`'s training step over `probed`'s (same scale), estimated by their FLOPs per step."""
    return _flops_per_step(run) / _flops_per_step(probed)


def shape_from_flops(shape: ShapeCost, probed: RunSpec, run: RunSpec) -> ShapeCost:
    """`run`'s scale's parts estimated from `probed`'s measured `shape`: the compute (steps,
    warm-up, validation, suite) by their training FLOPs per step, the checkpoint by their
    parameters."""
    from archaudit.audit.grid.plan import model_sizes
    from archaudit.audit.planning.probe import ShapeCost

    compute = _flops_per_step(run) / _flops_per_step(probed)
    params = model_sizes(run.model)[0] / max(model_sizes(probed.model)[0], 1)
    parts = {f.name: getattr(shape, f.name) for f in dataclasses.fields(shape)}
    scaled: dict[str, Timed] = {
        name: value * (params if name == "save" else compute) for name, value in parts.items()
    }
    return ShapeCost(**scaled)


@dataclass(frozen=True)
class ReferenceCosts:
    """What no probe measured, in reference steps (`probe.reference_step`, 0.015-0.03 s on an
    idle core of the development machine, 0.05-0.3 s at a load of 20): each part timed between
    two reference steps by `benchmarks/plan_parts.py` (2 cores at a load of 18-22,
    `benchmarks/plan_parts.json`; the judgement and finish also from the 2-arm audit's own
    timeline, `benchmarks/plan_load-first-*.json`). A part that slows with the load as the
    reference step does keeps its count at any load; the readings of one part still differ by
    up to 2x, as the reference step's own time moves by that much within a minute on a machine
    others load. They stand in only until a probe measures the part on this machine (≈)."""

    warm_start: float = 13.5
    """A run forked from the warm server."""
    cold_start: float = 345.0
    """A fresh interpreter importing what `run-one` imports (also the `run` command's own)."""
    server_start: float = 336.0
    """The warm server's preload, beyond a forked start."""
    audit_start: float = 458.0
    """The `run` command's start to its first run's (its interpreter, the plan, the warm
    server's preload and first fork): the median of three 2-arm audits' own timelines, each
    over the reference step timed at its plan (526, 458 and 374;
    `benchmarks/plan_load-first-*.json`). A cold start and a server's preload timed apart add
    to more (345 + 336)."""
    judgement: float = 15.0
    """The loop's judgement between two rounds, with the next round's set-up (its run-to-run
    work measured 0): the median of five readings, the loop probe's loss-only audit run twice
    (1.7 and 69) and the three 2-arm audits' timelines (15, 15 and 17)."""
    finish: float = 409.0
    """The last run's end to `run`'s exit (the last judgement, the verdict tables, the report):
    the median of the same five (752, 323; 300, 547 and 409)."""
    step: tuple[float, float] = (1.68, 1.87)
    """A training step: fixed (the optimizer, small kernels), and per GFLOP of the step; the
    least-squares line through two readings at each of three scales, alone and beside a
    neighbour stepping the same shape (d48, 1.1 GFLOP: 3.3 and 4.3; the starter's tiny, 4.1
    GFLOP: 6.9 and 11.7; small, 24.6 GFLOP: 30.3 and 65.0)."""
    val_share: float = 0.26
    """A validation batch over a training step (0.21-0.30 in those six readings)."""
    save: float = 5.0
    """A checkpoint save (their median; 1.4-30: a write, as fast as the disk is idle)."""
    suite_per_item: tuple[float, float] = (0.08, 1.77)
    """One item of the suite scored: fixed, and per GFLOP of its forward pass at most
    (`_forward_flops_per_item`: a context window at a third of the training FLOPs per token):
    the least-squares line through the demo suite's time per item (at 20 and at 60-100 items
    per task) in the same six readings (0.073 and 0.102 at 0.012 GFLOP, 0.117 and 0.226 at
    0.043, 0.357 and 0.704 at 0.256)."""


REFERENCE_COSTS = ReferenceCosts()


def startup_probe_refs(*, warm: bool) -> float:
    """The start-up probe's own length in reference steps: a warm server's first start and
    `probe.WARM_STARTS` forks, or one cold start."""
    from archaudit.audit.planning.probe import WARM_STARTS

    costs = REFERENCE_COSTS
    return costs.server_start + WARM_STARTS * costs.warm_start if warm else costs.cold_start


def start_from_reference(ref: Timed, *, warm: bool) -> Timed:
    """A run's start-up, estimated from the reference step `ref` timed now."""
    costs = REFERENCE_COSTS
    return ref * (costs.warm_start if warm else costs.cold_start)


def audit_start_from_reference(ref: Timed, *, warm: bool) -> Timed:
    """What an audit pays once beside its runs (`probe.audit_start`), from `ref`: a
    warm-started audit's measured start, else the `run` command's cold start."""
    costs = REFERENCE_COSTS
    return ref * (costs.audit_start if warm else costs.cold_start)


def loop_from_reference(ref: Timed) -> LoopCost:
    """The local loop's costs per run, per round and at its end (`probe.loop_cost`), from
    `ref`."""
    from archaudit.audit.planning.probe import ZERO, LoopCost

    costs = REFERENCE_COSTS
    return LoopCost(ZERO, ref * costs.judgement, ref * costs.finish)


def suite_from_reference(run: RunSpec, ref: Timed) -> Timed:
    """`run`'s suite from `ref`: its items (`suite_items`) at `ReferenceCosts.suite_per_item`."""
    fixed, per_gflop = REFERENCE_COSTS.suite_per_item
    per_item = fixed + per_gflop * _forward_flops_per_item(run) / 1e9
    return ref * (suite_items(run) * per_item)


def shape_from_reference(run: RunSpec, ref: Timed) -> ShapeCost:
    """`run`'s scale's parts from `ref` and its training FLOPs per step, when no scale of the
    plan was measured: the step, a validation batch, a checkpoint save and the suite."""
    from archaudit.audit.planning.probe import ZERO, ShapeCost

    costs = REFERENCE_COSTS
    fixed, per_gflop = costs.step
    step = ref * (fixed + per_gflop * _flops_per_step(run) / 1e9)
    suite = suite_from_reference(run, ref) if run.suite else ZERO
    return ShapeCost(step, ZERO, step * costs.val_share, ref * costs.save, suite)


def nearest_scale(run: RunSpec, measured: dict[str, RunSpec]) -> str:
    """The scale of `measured` (by name, its probed run) whose FLOPs per step are nearest
    `run`'s (by ratio): the best anchor for `shape_from_flops`."""

    own = _flops_per_step(run)
    return min(measured, key=lambda s: abs(math.log(_flops_per_step(measured[s]) / own)))
