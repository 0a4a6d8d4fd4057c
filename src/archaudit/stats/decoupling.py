"""Loss–downstream decoupling (docs/protocol.md): arms whose loss and downstream verdicts disagree.

For each arm, r_L = (L − L₀)/L₀ is the relative loss change and r_D = (D − D₀)/|D₀| the relative
downstream change; both metrics get their verdict from `judge` (loss lower-is-better). A metric
is "near baseline" when its verdict is within-noise or nominal (not significant after
correction) and its relative change is below the threshold; it "moved" when its verdict is
significant (improver/regressor). An arm is decoupled when

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

from archaudit.stats.judge import judge
from archaudit.stats.serialize import JsonResult
from archaudit.stats.table import TableLike, load_table
from archaudit.stats.verdicts import (
    IMPROVER,
    NOMINAL_IMPROVER,
    NOMINAL_REGRESSOR,
    REGRESSOR,
    WITHIN_NOISE,
)

LOSS_FLAT = "loss flat, downstream moved"
DOWNSTREAM_FLAT = "downstream flat, loss moved"
OPPOSITE = "loss and downstream disagree in direction"

_NOT_SIGNIFICANT = (WITHIN_NOISE, NOMINAL_IMPROVER, NOMINAL_REGRESSOR)
_DIRECTION = {IMPROVER: 1, REGRESSOR: -1}


@dataclass(frozen=True)
class ArmDecoupling(JsonResult):
    """One arm's loss change, downstream verdict and whether they disagree."""

    arm: str
    family: str | None
    loss_change: float
    """r_L = (L − L₀)/L₀."""
    loss_verdict: str
    downstream_change: float
    """r_D = (D − D₀)/|D₀|."""
    downstream_delta: float
    downstream_z: float
    """Δ_D in units of the downstream noise floor."""
    downstream_verdict: str
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
    threshold: float
    scale: str
    arms: tuple[ArmDecoupling, ...]
    families: tuple[FamilyDecoupling, ...]


def decoupling(
    table: TableLike,
    *,
    loss_metric: str = "val_loss",
    downstream_metric: str = "downstream_avg",
    baseline: str = "baseline",
    threshold: float = 0.05,
    correction: str = "holm",
    alpha: float = 0.05,
    scale: str | None = None,
) -> Decoupling:
    """Find arms whose loss says "near baseline" while downstream says otherwise (or reverse)."""
    table = load_table(table)
    options = dict(baseline=baseline, correction=correction, alpha=alpha, scale=scale)
    loss = judge(table, loss_metric, lower_is_better=True, **options)
    downstream = judge(table, downstream_metric, **options)
    loss_by_arm = {v.arm: v for v in loss.arms if not math.isnan(v.delta)}
    arms = []
    for verdict in downstream.arms:
        if math.isnan(verdict.delta) or verdict.arm not in loss_by_arm:
            continue
        loss_verdict = loss_by_arm[verdict.arm]
        loss_change = _relative(loss_verdict.mean, loss.baseline_mean)
        downstream_change = _relative(verdict.mean, downstream.baseline_mean)
        kind = _kind(
            (loss_verdict.verdict, loss_change), (verdict.verdict, downstream_change), threshold
        )
        arms.append(
            ArmDecoupling(
                arm=verdict.arm,
                family=verdict.family,
                loss_change=loss_change,
                loss_verdict=loss_verdict.verdict,
                downstream_change=downstream_change,
                downstream_delta=verdict.delta,
                downstream_z=verdict.z,
                downstream_verdict=verdict.verdict,
                decoupled=kind is not None,
                kind=kind,
            )
        )
    return Decoupling(
        loss_metric=loss_metric,
        downstream_metric=downstream_metric,
        threshold=threshold,
        scale=downstream.scale,
        arms=tuple(arms),
        families=_by_family(arms),
    )


def _relative(value: float, baseline: float) -> float:
    return (value - baseline) / abs(baseline) if baseline != 0 else math.inf


def _kind(loss: tuple[str, float], downstream: tuple[str, float], threshold: float) -> str | None:
    """Each side is (verdict, relative change); verdicts are oriented so improver = better."""

    def flat(side: tuple[str, float]) -> bool:
        return side[0] in _NOT_SIGNIFICANT and abs(side[1]) < threshold

    loss_moved, downstream_moved = _DIRECTION.get(loss[0], 0), _DIRECTION.get(downstream[0], 0)
    if downstream_moved and flat(loss):
        return LOSS_FLAT
    if loss_moved and flat(downstream):
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
