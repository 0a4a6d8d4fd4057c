"""Loss–downstream decoupling (docs/protocol.md): arms whose loss and downstream verdicts disagree.

For each arm, r_L = (L − L₀)/L₀ is the relative loss change and r_D = (D − D₀)/|D₀| the relative
downstream change. Both metrics get their verdict from `judge` (loss lower-is-better). A metric
"moved" when its verdict is significant (improver/regressor). It is "flat" only when it is shown
equivalent to the baseline within a margin: its simultaneous (1 − α) interval for Δ (`judge`'s,
Bonferroni over the m arms) lies inside ±margin, a two one-sided tests (TOST) equivalence test at
level α/(2m) per arm. The margin is the arm's MDE by default (the smallest effect the design
would detect: an effect the audit could not see is no evidence of "no effect"), or `margin` noise
floors σ of that metric. A significant verdict is never flat. One that is merely not
significant is neither moved nor flat, so it cannot make an arm decoupled. An arm is decoupled when

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
from archaudit.stats.family_test import ROBUST
from archaudit.stats.judge import ArmVerdict, Judgement, judge
from archaudit.stats.options import DEFAULT, JudgeOptions
from archaudit.stats.serialize import JsonResult
from archaudit.stats.table import TableLike, load_table
from archaudit.stats.verdicts import IMPROVER, REGRESSOR

LOSS_FLAT = "loss flat, downstream moved"
DOWNSTREAM_FLAT = "downstream flat, loss moved"
OPPOSITE = "loss and downstream disagree in direction"

_DIRECTION: dict[str, int] = {IMPROVER: 1, REGRESSOR: -1}


@dataclass(frozen=True)
class ArmDecoupling(JsonResult):
    """One arm's loss change, downstream verdict and whether they disagree."""

    arm: str
    family: str | None
    loss_change: float
    """r_L = (L − L₀)/L₀."""
    loss_verdict: str
    loss_flat: bool
    """The loss is equivalent to the baseline's within `loss_margin` (TOST)."""
    loss_margin: float
    """The equivalence margin of the loss, in its units."""
    downstream_change: float
    """r_D = (D − D₀)/|D₀|."""
    downstream_delta: float
    downstream_z: float
    """Δ_D in units of the downstream noise floor."""
    downstream_verdict: str
    downstream_flat: bool
    downstream_margin: float
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
    loss_band: float
    """The widest arm's loss margin relative to the baseline loss (for figures: |r_L| inside
    it can be flat)."""
    scale: str
    arms: tuple[ArmDecoupling, ...]
    families: tuple[FamilyDecoupling, ...]


def decoupling(
    table: TableLike,
    options: JudgeOptions = DEFAULT,
    *,
    loss_metric: str = "val_loss",
    downstream_metric: str = "downstream_avg",
    margin: float | None = None,
) -> Decoupling:
    """Find arms whose loss is flat while downstream moved (or the reverse, or opposite moves).

    Both metrics are judged under `options` (the family, test, correction and α), the loss
    always lower-is-better.
    """
    table = load_table(table)
    if margin is not None and not margin > 0:
        raise ConfigError(f"margin must be a positive number of noise floors σ, got {margin}")
    loss = judge(table, loss_metric, options.but(lower_is_better=True))
    downstream = judge(table, downstream_metric, options)
    loss_by_arm = {v.arm: v for v in loss.arms if not math.isnan(v.delta)}
    arms = [
        _arm(loss, loss_by_arm[verdict.arm], downstream, verdict, margin)
        for verdict in downstream.arms
        if not math.isnan(verdict.delta) and verdict.arm in loss_by_arm
    ]
    widest = max((arm.loss_margin for arm in arms), default=math.nan)
    return Decoupling(
        loss_metric=loss_metric,
        downstream_metric=downstream_metric,
        margin=margin,
        loss_band=abs(_relative(loss.baseline_mean + widest, loss.baseline_mean)),
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
    loss_margin = _margin(loss_verdict, loss.sigma, margin)
    downstream_margin = _margin(verdict, downstream.sigma, margin)
    flat = _equivalent(loss_verdict, loss_margin), _equivalent(verdict, downstream_margin)
    kind = _kind((loss_verdict.verdict, flat[0]), (verdict.verdict, flat[1]))
    return ArmDecoupling(
        arm=verdict.arm,
        family=verdict.family,
        loss_change=_relative(loss_verdict.mean, loss.baseline_mean),
        loss_verdict=loss_verdict.verdict,
        loss_flat=flat[0],
        loss_margin=loss_margin,
        downstream_change=_relative(verdict.mean, downstream.baseline_mean),
        downstream_delta=verdict.delta,
        downstream_z=verdict.z,
        downstream_verdict=verdict.verdict,
        downstream_flat=flat[1],
        downstream_margin=downstream_margin,
        decoupled=kind is not None,
        kind=kind,
    )


def _margin(verdict: ArmVerdict, sigma: float, margin: float | None) -> float:
    """The equivalence margin in the metric's units: `margin` σ, else the arm's MDE."""
    return verdict.mde if margin is None else margin * sigma


def _equivalent(verdict: ArmVerdict, margin: float) -> bool:
    """Not significant, and TOST: the arm's simultaneous interval for Δ lies inside ±margin. A
    single seed judged by the robust test is never flat: its own spread is unseen, so it can no
    more show equivalence than an effect (docs/verdicts.md)."""
    if verdict.test == ROBUST and verdict.n_seeds < 2:
        return False
    low, high = verdict.interval
    return verdict.verdict not in _DIRECTION and bool(-margin < low and high < margin)


def _relative(value: float, baseline: float) -> float:
    return (value - baseline) / abs(baseline) if baseline != 0 else math.inf


def _kind(loss: tuple[str, bool], downstream: tuple[str, bool]) -> str | None:
    """Each side is (verdict, shown equivalent). Verdicts are oriented so improver = better."""
    loss_moved, downstream_moved = _DIRECTION.get(loss[0], 0), _DIRECTION.get(downstream[0], 0)
    if downstream_moved and loss[1]:
        return LOSS_FLAT
    if loss_moved and downstream[1]:
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
