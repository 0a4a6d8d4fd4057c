"""Loss–downstream decoupling (docs/protocol.md): arms whose loss and downstream verdicts disagree.

For each arm, r_L = (L − L₀)/L₀ is the relative loss change and r_D = (D − D₀)/|D₀| the relative
downstream change. Both metrics get their verdict from `judge` (loss lower-is-better). A metric
"moved" when its verdict is significant (improver/regressor). It is "flat" only when it is shown
equivalent to the baseline within a margin: its simultaneous (1 − α) interval for Δ (`judge`'s,
Bonferroni over the m arms) lies inside ±margin, a two one-sided tests (TOST) equivalence test at
level α/(2m) per arm. The margin is the arm's MDE by default (the smallest effect the design
would detect: an effect the audit could not see is no evidence of "no effect"), or `margin` noise
floors σ of that metric. A margin must also be small against the metric's own scale: one wider
than `FLAT_SHARE` of the baseline's value (a fifth of it) makes "flat" *not testable* (an MDE
of 0.11 against a baseline accuracy of 0.013 would call any change flat). A significant verdict
is never flat. One that is merely not significant is neither moved nor flat, so it cannot make
an arm decoupled. An arm is decoupled when

- `loss flat, downstream moved`: the loss is near baseline and the downstream moved, or
- `downstream flat, loss moved`: the reverse, or
- `loss and downstream disagree in direction`: both moved, one better and one worse.

A significant loss regression that goes with a significant downstream regression is coupled,
however small r_L is: the loss verdict, not r_L alone, says whether the loss moved.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from archaudit.errors import ConfigError
from archaudit.metrics import DOWNSTREAM_AVERAGE, PRIMARY_LOSS
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.judging.judgement import ArmVerdict, Judgement, judge
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import TableLike, load_table
from archaudit.stats.records.verdicts import IMPROVER, REGRESSOR, WITHIN_NOISE, Verdict
from archaudit.stats.tests import statistical_test

LOSS_FLAT = "loss flat, downstream moved"
DOWNSTREAM_FLAT = "downstream flat, loss moved"
OPPOSITE = "loss and downstream disagree in direction"

_DIRECTION: dict[str, int] = {IMPROVER: 1, REGRESSOR: -1}
FLAT_SHARE = 0.2
"""The widest equivalence margin that can show a metric flat, as a share of |baseline value|."""
MOVED, FLAT, NOT_SHOWN_FLAT, NOT_TESTABLE = "moved", "flat", "not shown flat", "flat not testable"
"""What one side of an arm is, for tables and figures."""


@dataclass(frozen=True)
class Side:
    """One arm on one metric as its judgement gave it: what the flat test reads. The report
    builds these from the verdicts it shows, so its claims are those verdicts'."""

    verdict: Verdict
    interval: tuple[float, float] | None
    margin: float
    """The equivalence margin, in the metric's units."""
    baseline: float
    """The baseline's value: the scale a margin must be small against."""
    single_seed_robust: bool = False
    """One seed judged without a measured spread of its own: never flat."""

    @property
    def testable(self) -> bool:
        """The margin is small against the metric's own scale (`FLAT_SHARE`)."""
        return math.isfinite(self.margin) and self.margin <= FLAT_SHARE * abs(self.baseline)

    @property
    def flat(self) -> bool:
        """Within noise (no move at any level: a nominal or candidate effect is a direction the
        design could not confirm, not flatness), the margin testable, and TOST: the interval
        lies inside ±margin. With a calibrated level the MDE (the margin) can be tens of σ, so
        "not significant" alone would call a 10σ move flat."""
        if self.single_seed_robust or self.interval is None or not self.testable:
            return False
        low, high = self.interval
        return self.verdict == WITHIN_NOISE and bool(-self.margin < low and high < self.margin)

    @property
    def status(self) -> str:
        if self.verdict in _DIRECTION:
            return MOVED
        return FLAT if self.flat else NOT_SHOWN_FLAT if self.testable else NOT_TESTABLE


@dataclass(frozen=True)
class ArmDecoupling(JsonResult):
    """One arm's loss change, downstream verdict and whether they disagree."""

    arm: str
    family: str | None
    loss_change: float
    """r_L = (L − L₀)/L₀."""
    loss_verdict: Verdict
    loss_flat: bool
    """The loss is equivalent to the baseline's within `loss_margin` (TOST)."""
    loss_margin: float
    """The equivalence margin of the loss, in its units."""
    loss_status: str
    """moved, flat, not shown flat, or flat not testable (the margin is too wide)."""
    downstream_change: float
    """r_D = (D − D₀)/|D₀|."""
    downstream_delta: float
    downstream_z: float
    """Δ_D in units of the downstream noise floor."""
    downstream_verdict: Verdict
    downstream_flat: bool
    downstream_margin: float
    downstream_status: str
    decoupled: bool
    kind: str | None


@dataclass(frozen=True)
class FamilyDecoupling(JsonResult):
    """Decoupling summarized over one modification family."""

    family: str
    n_arms: int
    n_decoupled: int
    share: float
    mean_abs_loss_change: float
    mean_abs_downstream_z: float


@dataclass(frozen=True)
class Decoupling(JsonResult):
    """Per-arm and per-family loss–downstream decoupling at one scale."""

    loss_metric: str
    downstream_metric: str
    margin: float | None
    """The equivalence margin in noise floors σ (None: each arm's MDE)."""
    scale: str
    arms: tuple[ArmDecoupling, ...]
    families: tuple[FamilyDecoupling, ...]


def decoupling(
    table: TableLike,
    options: JudgeOptions = DEFAULT,
    *,
    loss_metric: str = PRIMARY_LOSS,
    downstream_metric: str = DOWNSTREAM_AVERAGE,
    margin: float | None = None,
) -> Decoupling:
    """Find arms whose loss is flat while downstream moved (or the reverse, or opposite moves).

    Both metrics are judged under `options` (the family, test, correction and α), the loss
    always lower-is-better.
    """
    table = load_table(table)
    loss = judge(table, loss_metric, options.but(lower_is_better=True))
    return decouple(loss, judge(table, downstream_metric, options), margin)


def decouple(loss: Judgement, downstream: Judgement, margin: float | None = None) -> Decoupling:
    """Decoupling of one family from its two judgements (a loss, a downstream metric) as they
    were made: `findings` passes the ones every room shows (the sequential loop's included)."""
    if margin is not None and not margin > 0:
        raise ConfigError(f"margin must be a positive number of noise floors σ, got {margin}")
    loss_metric, downstream_metric = loss.metric, downstream.metric
    loss_by_arm = {v.arm: v for v in loss.arms if not math.isnan(v.delta)}
    arms = [
        _arm(loss, loss_by_arm[verdict.arm], downstream, verdict, margin)
        for verdict in downstream.arms
        if not math.isnan(verdict.delta) and verdict.arm in loss_by_arm
    ]
    return Decoupling(
        loss_metric=loss_metric,
        downstream_metric=downstream_metric,
        margin=margin,
        scale=downstream.scale,
        arms=tuple(arms),
        families=_by_family(arms),
    )


def _arm(
    loss: Judgement,
    loss_verdict: ArmVerdict,
    downstream: Judgement,
    verdict: ArmVerdict,
    margin: float | None,
) -> ArmDecoupling:
    """One arm's two verdicts side by side, each shown flat or not, and their disagreement."""
    loss_side = _side(loss_verdict, loss, margin)
    down_side = _side(verdict, downstream, margin)
    kind = decoupled_kind(loss_side, down_side)
    return ArmDecoupling(
        arm=verdict.arm,
        family=verdict.family,
        loss_change=relative_change(loss_verdict.mean, loss.baseline_mean),
        loss_verdict=loss_verdict.verdict,
        loss_flat=loss_side.flat,
        loss_margin=loss_side.margin,
        loss_status=loss_side.status,
        downstream_change=relative_change(verdict.mean, downstream.baseline_mean),
        downstream_delta=verdict.delta,
        downstream_z=verdict.z,
        downstream_verdict=verdict.verdict,
        downstream_flat=down_side.flat,
        downstream_margin=down_side.margin,
        downstream_status=down_side.status,
        decoupled=kind is not None,
        kind=kind,
    )


def _side(verdict: ArmVerdict, judgement: Judgement, margin: float | None) -> Side:
    """The margin is `margin` σ, else the arm's MDE. A single seed judged without its own spread
    (the robust test, the loop's 6σ bound) is never flat: its spread is unseen, so it can no
    more show equivalence than an effect (docs/verdicts.md)."""
    low, high = verdict.interval
    return Side(
        verdict=verdict.verdict,
        interval=(low, high),
        margin=verdict.mde if margin is None else margin * judgement.sigma,
        baseline=judgement.baseline_mean,
        single_seed_robust=_bounded(verdict.test) and verdict.n_seeds < 2,
    )


def _bounded(test: str | None) -> bool:
    """Whether `test` (None: the arm was not tested) judges one seed at a bound, not by its
    own spread."""
    return test is not None and statistical_test(test).bounds_single_seeds


def relative_change(value: float, baseline: float) -> float:
    """(value − baseline)/|baseline|: r_L and r_D."""
    return (value - baseline) / abs(baseline) if baseline != 0 else math.inf


def decoupled_kind(loss: Side, downstream: Side) -> str | None:
    """How the two sides disagree, or None. Verdicts are oriented so improver = better."""
    loss_moved = _DIRECTION.get(loss.verdict, 0)
    downstream_moved = _DIRECTION.get(downstream.verdict, 0)
    if downstream_moved and loss.flat:
        return LOSS_FLAT
    if loss_moved and downstream.flat:
        return DOWNSTREAM_FLAT
    if loss_moved and downstream_moved and loss_moved != downstream_moved:
        return OPPOSITE
    return None


def _by_family(arms: list[ArmDecoupling]) -> tuple[FamilyDecoupling, ...]:
    groups: dict[str, list[ArmDecoupling]] = defaultdict(list)
    for arm in arms:
        groups[arm.family or "unknown"].append(arm)
    return tuple(
        FamilyDecoupling(
            family=family,
            n_arms=len(members),
            n_decoupled=sum(arm.decoupled for arm in members),
            share=sum(arm.decoupled for arm in members) / len(members),
            mean_abs_loss_change=float(np.mean([abs(arm.loss_change) for arm in members])),
            mean_abs_downstream_z=float(np.mean([abs(arm.downstream_z) for arm in members])),
        )
        for family, members in sorted(groups.items())
    )
