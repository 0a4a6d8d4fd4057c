"""The stability verdict's FWER on null sweeps and its power on planted fragile arms, by
simulation (stats/analyses/sweeps.py), before and after the primary test (issue 43).

Audits of the baseline and `--arms − 1` arms, 6 rates, 2 and 3 seeds per rate. Null audits:
every arm is the baseline's model (`quiet`: no breaks; `random breaks`: the top two rates break
with probability 1/2 in every arm); the share of audits with any verdict other than
within-noise is the FWER. Planted audits: one arm breaks at the top two rates, or has 2× the
baseline's gradient norm above the recipe's rate; the share in which it is `more-fragile` is
the power. "before" is the rule this replaced (ΔS and unstable runs of every arm in one Holm
family, read off the secondary p-values every verdict keeps); "after" is the verdict.

A second table: the verdict when a third seed is trained only for the arms (and the baseline)
whose 2-seed primary p is ≤ 0.25 (`simulate_adaptive`), with the mean runs it trained.

    python benchmarks/stress_power.py [--trials 400] [--arms 8] [--permutations 999]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence

import numpy as np

from archaudit.stats.analyses.stability import (
    MORE_FRAGILE,
    MORE_ROBUST,
    WITHIN_NOISE,
    StabilityVerdict,
    judge_stability,
)
from archaudit.stats.analyses.sweeps import (
    RANDOM_BREAKS,
    SweepModel,
    breaking_at_top,
    grad_norm_times,
    simulate_adaptive,
    simulate_audit,
)
from archaudit.stats.inference.corrections import adjust_pvalues

QUIET = SweepModel()
SCENARIOS: dict[str, tuple[SweepModel, SweepModel | None]] = {
    "null, quiet": (QUIET, None),
    "null, random breaks": (RANDOM_BREAKS, None),
    "breaks at the top two rates": (QUIET, breaking_at_top(QUIET, 2)),
    "gradient norm 2x above the recipe's rate": (QUIET, grad_norm_times(QUIET, 2.0)),
}


def before(verdicts: Sequence[StabilityVerdict], alpha: float) -> list[str]:
    """The replaced rule: both secondary p-values of every arm in one Holm family; worse on a
    corrected test and better on none = more-fragile (and the mirror)."""
    flat = [p for v in verdicts for p in (v.p_sensitivity, v.p_stability)]
    adjusted = adjust_pvalues(flat, "holm")
    out = []
    for i, v in enumerate(verdicts):
        aps, apu = adjusted[2 * i], adjusted[2 * i + 1]
        worse = (aps < alpha and v.sensitivity_delta > 0) or (apu < alpha and v.unstable_delta > 0)
        better = (aps < alpha and v.sensitivity_delta < 0) or (apu < alpha and v.unstable_delta < 0)
        out.append(
            MORE_FRAGILE
            if worse and not better
            else MORE_ROBUST
            if better and not worse
            else WITHIN_NOISE
        )
    return out


def after(verdicts: Sequence[StabilityVerdict], alpha: float) -> list[str]:
    return [v.verdict for v in verdicts]


def rate(
    base: SweepModel,
    planted: SweepModel | None,
    arms: int,
    seeds: int,
    trials: int,
    permutations: int,
) -> dict[str, float]:
    """Per rule: the FWER (no planted arm) or P(more-fragile) of the planted arm."""
    rng = np.random.default_rng(2026)
    rules: dict[str, Callable[[Sequence[StabilityVerdict], float], list[str]]] = {
        "before": before,
        "after": after,
    }
    hits = dict.fromkeys(rules, 0)
    for _ in range(trials):
        models = {"baseline": base, **{f"arm{a}": base for a in range(1, arms)}}
        if planted is not None:
            models["arm1"] = planted
        verdicts = judge_stability(
            simulate_audit(models, seeds, rng),
            "baseline",
            permutations=permutations,
        )
        for name, rule in rules.items():
            said = rule(verdicts, 0.05)
            if planted is None:
                hits[name] += any(v != WITHIN_NOISE for v in said)
            else:
                hits[name] += said[0] == MORE_FRAGILE
    return {name: n / trials for name, n in hits.items()}


def adaptive_rate(
    base: SweepModel, planted: SweepModel | None, arms: int, trials: int, permutations: int
) -> tuple[float, float]:
    """The verdict after `simulate_adaptive` (2 seeds, a third where p ≤ 0.25): the FWER or
    P(more-fragile) as in `rate`, and the mean runs trained per audit."""
    rng = np.random.default_rng(2026)
    hits = runs = 0
    for _ in range(trials):
        models = {"baseline": base, **{f"arm{a}": base for a in range(1, arms)}}
        if planted is not None:
            models["arm1"] = planted
        outcome = simulate_adaptive(models, rng, permutations=permutations)
        said = [v.verdict for v in outcome.verdicts]
        hits += any(v != WITHIN_NOISE for v in said) if planted is None else said[0] == MORE_FRAGILE
        runs += outcome.runs
    return hits / trials, runs / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--arms", type=int, default=8, help="arms with the baseline")
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--seeds", type=int, nargs="+", default=[2, 3])
    args = parser.parse_args()
    print(f"{args.arms} arms (baseline + {args.arms - 1}), {args.trials} audits per cell, α 0.05")
    print("| scenario | seeds | measures | before | after |")
    print("|---|---|---|---|---|")
    for name, (base, planted) in SCENARIOS.items():
        for seeds in args.seeds:
            got = rate(base, planted, args.arms, seeds, args.trials, args.permutations)
            what = "FWER" if planted is None else "P(more-fragile)"
            se = max(math.sqrt(v * (1 - v) / args.trials) for v in got.values())
            print(
                f"| {name} | {seeds} | {what} (± {se:.3f}) | {got['before']:.3f} "
                f"| {got['after']:.3f} |",
                flush=True,
            )
    rates = len(QUIET.lrs)
    print(
        f"\nadding a third seed where a verdict can still change (2-seed primary p ≤ 0.25); "
        f"fixed designs train {2 * rates * args.arms} (2 seeds) or {3 * rates * args.arms} runs"
    )
    print("| scenario | measures | after, adaptive | mean runs |")
    print("|---|---|---|---|")
    for name, (base, planted) in SCENARIOS.items():
        got, runs = adaptive_rate(base, planted, args.arms, args.trials, args.permutations)
        what = "FWER" if planted is None else "P(more-fragile)"
        print(f"| {name} | {what} | {got:.3f} | {runs:.0f} |", flush=True)


if __name__ == "__main__":
    main()
