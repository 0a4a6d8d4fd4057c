"""`archaudit plan`'s power lines: what each planned family can detect before it runs."""

from __future__ import annotations

from collections import Counter

from archaudit.audit.grid.plan import BASELINE, Plan
from archaudit.stats.choices.options import DEFAULT, primary_alpha
from archaudit.stats.simulation.plan_power import FamilyPower, family_power


def plan_power(plan: Plan, sigma: float | None = None) -> list[FamilyPower]:
    """One `FamilyPower` per (baseline, scale): its arms' planned seeds against the baseline's
    (`sigma`, a known seed σ of the primary metric, turns σ into metric units), and the loop
    `run --until-settled` would run on it (≤ `seeds.max` seeds per arm)."""
    seeds = Counter((run.baseline, run.scale, run.arm, run.mods == BASELINE) for run in plan.runs)
    families: dict[tuple[str, str], tuple[list[int], int]] = {}
    for (baseline, scale, _, is_baseline), count in seeds.items():
        arms, _ = families.setdefault((baseline, scale), ([], 0))
        if is_baseline:
            families[(baseline, scale)] = (arms, count)
        else:
            arms.append(count)
    primaries = len(plan.spec.primary_metrics)
    alpha = primary_alpha(DEFAULT.alpha, primaries)
    return [
        family_power(scale, tuple(arms), max(base, 2), sigma, alpha, plan.spec.seeds.max, primaries)
        for (_, scale), (arms, base) in families.items()
        if arms
    ]
