"""The power of each judged family's design as it ran: the curve, its MDE and the seeds a claim
would need, one record per judgement (`Findings.power`, drawn by the report)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.judging.judgement import Judgement
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.simulation.calibrate import level_shares
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.power import PowerCurve, power_curve, seeds_needed
from archaudit.stats.simulation.sequential import sequential_power_curve

POWER_EFFECTS = (3.0, 5.0, 10.0)
"""Effects (in σ) for which the power section says how many seeds a claim would need."""
SEEDS_CAP = 100


@dataclass(frozen=True)
class PowerCase(JsonResult):
    """The power of one judged family's design as it ran (stats.power, or the sequential
    loop's simulated power): the curve, its MDE and the table's MDE are one record."""

    metric: str
    scale: str
    sigma: float
    arm_seeds: tuple[int, ...]
    """Distinct seeds per tested arm."""
    baseline_seeds: int
    m: int
    curve: PowerCurve
    seeds_for: tuple[tuple[float, int | None], ...]
    """(effect in σ, seeds per arm a balanced design needs; None = more than SEEDS_CAP)."""


def power_case(v: Judgement) -> PowerCase | None:
    """The family's power as it ran: the sequential loop's (simulated) when the loop judged
    it, else the fixed design's with each tested arm's own seeds; None without a noise floor
    or a tested arm."""
    if v.baseline_n < 2:
        return None
    if v.sequential is not None and v.sequential.design is not None:
        arms = v.sequential.design.arms
        curve = sequential_power_curve(arms, v.sequential.rule)
        seeds = tuple(sorted({a.n_seeds for a in v.arms if a.stopped is not None}))
    elif v.design is not None:
        arms, seeds = v.m, tuple(sorted(set(v.design.design.arm_seeds)))
        curve = _fixed_curve(v.design.design, v.power_target)
    else:
        return None
    return PowerCase(
        metric=v.metric,
        scale=v.scale,
        sigma=v.sigma,
        arm_seeds=seeds,
        baseline_seeds=v.baseline_n,
        m=arms,
        curve=curve,
        seeds_for=_seeds_for(max(arms, 1), v.alpha, v.correction),
    )


# Metrics judged at one scale share their design, so each is computed once per process.
@functools.lru_cache(maxsize=64)
def _fixed_curve(design: AuditDesign, target: float) -> PowerCurve:
    """The power at the design's calibrated levels, averaged over how often its audits get each
    (`level_shares`), as its design MDE (`arm_mde`) is."""
    levels = level_shares(design)
    arms = [(design.arm(n, at), share) for n in design.arm_seeds for at, share in levels]
    return power_curve([a for a, _ in arms], target, shares=[s for _, s in arms])


@functools.lru_cache(maxsize=64)
def _seeds_for(m: int, alpha: float, correction: str) -> tuple[tuple[float, int | None], ...]:
    options = JudgeOptions(alpha=alpha, correction=correction)
    return tuple(
        (x, seeds_needed(x, options, n_arms=m, max_seeds=SEEDS_CAP)) for x in POWER_EFFECTS
    )
