"""Loss–downstream decoupling (PROTOCOL.md): arms whose loss and downstream verdicts disagree.

For each arm, r_L = (L − L₀)/L₀ is the relative loss change and the downstream verdict comes
from `judge` on the downstream metric. The loss "moves" when |r_L| >= threshold (down = better).
An arm is decoupled when the downstream verdict is significant (improver/regressor) and the loss
did not move, or moved the other way. A downstream result that is not significant is no
evidence of decoupling (it may only lack power), so it never counts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from archaudit.stats.judge import judge
from archaudit.stats.serialize import JsonResult
from archaudit.stats.table import Table
from archaudit.stats.verdicts import IMPROVER, REGRESSOR

LOSS_FLAT = "loss flat, downstream moved"
OPPOSITE = "loss and downstream disagree in direction"


@dataclass(frozen=True)
class ArmDecoupling(JsonResult):
    """One arm's loss change, downstream verdict and whether they disagree."""

    arm: str
    family: str | None
    loss_change: float
    """r_L = (L − L₀)/L₀."""
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
    table: Table,
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
    options = dict(baseline=baseline, correction=correction, alpha=alpha, scale=scale)
    loss = judge(table, loss_metric, lower_is_better=True, **options)
    downstream = judge(table, downstream_metric, **options)
    loss_by_arm = {v.arm: v for v in loss.arms if not math.isnan(v.delta)}
    arms = []
    for verdict in downstream.arms:
        if math.isnan(verdict.delta) or verdict.arm not in loss_by_arm:
            continue
        change = (loss_by_arm[verdict.arm].mean - loss.baseline_mean) / loss.baseline_mean
        kind = _kind(change, verdict.verdict, threshold)
        arms.append(
            ArmDecoupling(
                arm=verdict.arm,
                family=verdict.family,
                loss_change=change,
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


def _kind(loss_change: float, downstream_verdict: str, threshold: float) -> str | None:
    loss_direction = 0 if abs(loss_change) < threshold else (1 if loss_change < 0 else -1)
    downstream_direction = {IMPROVER: 1, REGRESSOR: -1}.get(downstream_verdict, 0)
    if downstream_direction == 0 or downstream_direction == loss_direction:
        return None
    return LOSS_FLAT if loss_direction == 0 else OPPOSITE


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
