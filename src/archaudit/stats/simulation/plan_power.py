"""What a planned design can detect before a seed is spent: the MDE lines of `archaudit plan`.

Each family's MDE per seed count comes from the power formula at the design's calibrated level
(stats/simulation/calibrate.py); the sequential loop's from simulating it with one planted arm
(bisection on common draws), with its expected runs over effects from null up to that MDE
(`prior_loop`). A design whose MDE exceeds
`USABLE_MDE` says so and names the cheapest design that reaches it: a fixed design with more
seeds per arm (power formula at α) or the loop, whichever needs fewer runs.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from archaudit.formatting import num
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.design_rate import arm_mde
from archaudit.stats.simulation.disk_cache import cached, in_range
from archaudit.stats.simulation.power import default_baseline_seeds
from archaudit.stats.simulation.sequential import (
    LOOP_LEVEL_VERSION,
    RUNS_RANGE,
    SEQUENTIAL_RATE_VERSION,
    LoopState,
    SequentialRule,
    fixed_design,
    planted_power,
    run_sequential,
)

USABLE_MDE = 10.0
"""An MDE beyond this many σ detects no realistic effect (the measured arms move 1–8 σ)."""
LOOP_SEEDS = 6
"""The loop's seeds per arm when the caller names none: ≤ 6 (3.1σ at 20 arms). `plan` names
its audit's `seeds.max`, the loop `run --until-settled` would run."""
PLAN_AUDITS = 300
"""Simulated audits per step of the loop's MDE bisection (a plan estimate, not a verdict)."""
LOOP_AUDITS = 1000
"""Simulated audits (seed 0) behind the loop's expected runs: `plan --until-settled`'s estimate
simulates the same audits, so one design has one number (issue 46: 11 runs here, 10 there)."""
FIXED_SEEDS = range(2, 11)


@dataclass(frozen=True)
class FamilyPower(JsonResult):
    """One planned family: what it can detect, and what the loop would."""

    scale: str
    design: AuditDesign
    mdes: tuple[tuple[int, float], ...]
    """(seeds, MDE in σ) per seed count of its arms (∞: candidates only)."""
    sigma: float | None
    """A known seed σ of the primary metric (--sigma), for metric units."""
    loop_mde: float
    loop_runs: float
    """Expected runs of the loop (≤ `loop_seeds` seeds per arm), its arms' effects from null
    to `loop_mde` (`prior_loop`)."""
    cheapest: str
    """The cheapest design with MDE ≤ `USABLE_MDE` ("" when this one already is)."""
    loop_seeds: int = LOOP_SEEDS
    primaries: int = 1
    """The primary metrics α is split over (each family is judged at α / `primaries`)."""

    def lines(self) -> list[str]:
        parts = []
        for seeds, mde in self.mdes:
            units = f" = {num(mde * self.sigma)}" if self.sigma and math.isfinite(mde) else ""
            value = f"{num(mde)} σ{units}" if math.isfinite(mde) else "none (candidates only)"
            parts.append(f"{value} ({seeds} seed{'s' * (seeds > 1)})")
        loop_units = f" = {num(self.loop_mde * self.sigma)}" if self.sigma else ""
        alpha = self.design.alpha
        split = (
            f" (α = {num(alpha * self.primaries)} split over {self.primaries} primary metrics)"
            if self.primaries > 1
            else ""
        )
        lines = [
            f"{self.scale}: MDE at 80% power, α = {num(alpha)}{split}: {', '.join(parts)}; "
            "sequential --until-settled "
            f"≤ {self.loop_seeds} seeds: MDE {num(self.loop_mde)} σ{loop_units}, about "
            f"{self.loop_runs:.0f} runs expected"
        ]
        if self.cheapest:
            lines.append(
                f"{self.scale}: this design cannot detect an effect under {USABLE_MDE:g} σ; "
                f"the cheapest that can: {self.cheapest}"
            )
        return lines


def family_power(
    scale: str,
    arm_seeds: tuple[int, ...],
    baseline_seeds: int,
    sigma: float | None = None,
    alpha: float = 0.05,
    loop_seeds: int = LOOP_SEEDS,
    primaries: int = 1,
) -> FamilyPower:
    """The power lines of one planned family (arms with `arm_seeds` seeds, Holm at `alpha`,
    the audit's α split over its primary metrics), each MDE at its design's calibrated α′, and
    the loop's with ≤ `loop_seeds` seeds per arm."""
    design = AuditDesign(arm_seeds, baseline_seeds, alpha=alpha)
    mdes = tuple((n, arm_mde(design, n)) for n in sorted(set(arm_seeds)))
    loop_mde, loop_runs = loop_power(design.m, baseline_seeds, alpha, loop_seeds)
    usable = max(mde for _, mde in mdes) <= USABLE_MDE
    return FamilyPower(
        scale=scale,
        design=design,
        mdes=mdes,
        sigma=sigma,
        loop_mde=loop_mde,
        loop_runs=loop_runs,
        cheapest="" if usable else cheapest(design.m, loop_mde, loop_runs, alpha, loop_seeds),
        loop_seeds=loop_seeds,
        primaries=primaries,
    )


def cheapest(
    arms: int, loop_mde: float, loop_runs: float, alpha: float = 0.05, loop_seeds: int = LOOP_SEEDS
) -> str:
    """The fixed design (fewest seeds per arm) or the loop reaching `USABLE_MDE`, by runs, each
    fixed design's MDE at its own calibrated α′ (as its verdict table would state it)."""
    for seeds in FIXED_SEEDS:
        base = default_baseline_seeds(seeds)
        mde = arm_mde(AuditDesign((seeds,) * arms, base, alpha=alpha), seeds, 0.8)
        if mde <= USABLE_MDE:
            runs = arms * seeds + base
            fixed = f"{seeds} seeds per arm, baseline {base} (MDE {num(mde)} σ, {runs} runs)"
            if loop_mde <= USABLE_MDE and loop_runs < runs:
                return (
                    f"--until-settled ≤ {loop_seeds} seeds (MDE {num(loop_mde)} σ, about "
                    f"{loop_runs:.0f} runs), or {fixed}"
                )
            return fixed
    return f"--until-settled ≤ {loop_seeds} seeds (MDE {num(loop_mde)} σ)"


LOOP_POWER_VERSION = 1
"""Part of `loop_power`'s disk key, with the loop's level and rate versions: bump it when the
bisection or `prior_loop` changes."""
MDE_HIGH = 32.0
"""The top of the loop MDE's bisection, in σ."""


@lru_cache(maxsize=64)
def loop_power(
    arms: int, baseline_seeds: int, alpha: float = 0.05, loop_seeds: int = LOOP_SEEDS
) -> tuple[float, float]:
    """(MDE in σ, expected runs) of the loop ≤ `loop_seeds` seeds per arm; the runs from
    `LOOP_AUDITS` audits whose arms' effects spread from null to that MDE (`prior_loop`), the
    audits `plan --until-settled`'s estimate draws when no effect is known. Cached on disk
    (`disk_cache`, and shipped for `init`'s starters): 1.2 CPU-seconds of a first `plan` of the
    20-arm starter simulated its 9 bisection steps (issue 57)."""
    rule = SequentialRule(
        alpha=alpha, max_seeds=loop_seeds, baseline_seeds=max(baseline_seeds, 2), calibrated=True
    )
    fields = {"arms": arms, "rule": dataclasses.asdict(rule), "audits": PLAN_AUDITS}
    fields |= {"loop_audits": LOOP_AUDITS, "high": MDE_HIGH, "v": LOOP_POWER_VERSION}
    fields |= {"level_v": LOOP_LEVEL_VERSION, "rate_v": SEQUENTIAL_RATE_VERSION}

    def parse(stored: object) -> tuple[float, float]:
        if not isinstance(stored, list) or len(stored) != 2:
            raise ValueError(f"{stored!r} is not an (MDE, runs) pair")
        return in_range(stored[0], 0.0, MDE_HIGH), in_range(stored[1], 0.0, 1e9)

    mde, runs = cached("loop-power", fields, lambda: _loop_power(arms, rule), parse)
    return mde, runs


def _loop_power(arms: int, rule: SequentialRule) -> tuple[float, float]:
    low, high = 0.0, MDE_HIGH
    for _ in range(9):
        mid = (low + high) / 2
        found = planted_power(arms, rule, mid, PLAN_AUDITS)
        low, high = (low, mid) if found >= 0.8 else (mid, high)
    return high, prior_loop(arms, rule, high).runs_mean


@dataclass(frozen=True)
class PriorLoop(JsonResult):
    """The loop over a spread of effects, not one: in each simulated audit each arm's true
    effect is drawn uniform from null (0) up to `top` σ (the loop's own MDE when nothing is
    known), so the runs' mean and range hold over the spread and the loop's randomness
    together; beside it the fixed design with the same power on the same draws."""

    top: float
    runs_mean: float
    runs_range: tuple[float, float]
    """The 10th and 90th percentiles of the runs per audit (`RUNS_RANGE`)."""
    rounds_mean: float
    power: float
    """The share of arms declared in their true direction (improvers), over the spread."""
    fixed_seeds: int
    """The fewest seeds per arm (≤ 2 × the loop's) whose fixed design reaches `power`."""
    fixed_runs: int
    fixed_power: float


@lru_cache(maxsize=64)
def prior_loop(
    arms: int, rule: SequentialRule, top: float, audits: int = LOOP_AUDITS, seed: int = 0
) -> PriorLoop:
    """`audits` loops of `arms` arms, each arm's effect uniform on [0, `top`] σ per audit
    (reproducible from `seed`), and the fixed designs of 1 to 2 × max_seeds seeds per arm (the
    baseline as many, ≥ its noise floor) on the same draws."""
    rng = np.random.default_rng(seed)
    most = 2 * rule.max_seeds
    shift = rng.uniform(0.0, top, (audits, arms))
    baseline = rng.standard_normal((audits, max(rule.baseline_cap, most)))
    values = rng.standard_normal((audits, arms, most)) + shift[..., None]
    state, n, n0, rounds = run_sequential(
        rule, baseline[:, : rule.baseline_cap], values[..., : rule.max_seeds]
    )
    runs = n.sum(axis=1) + n0
    power = float(np.mean(state == LoopState.IMPROVER))
    fixed = []
    for seeds in range(1, most + 1):
        base = max(seeds, rule.baseline_seeds)
        found = fixed_design(rule, baseline[:, :base], values[..., :seeds]) == LoopState.IMPROVER
        fixed.append((seeds, arms * seeds + base, float(np.mean(found))))
    same = next((f for f in fixed if f[2] >= power), fixed[-1])
    low, high = np.percentile(runs, RUNS_RANGE)
    return PriorLoop(
        top=top,
        runs_mean=float(np.mean(runs)),
        runs_range=(float(low), float(high)),
        rounds_mean=float(np.mean(rounds)),
        power=power,
        fixed_seeds=same[0],
        fixed_runs=same[1],
        fixed_power=same[2],
    )
