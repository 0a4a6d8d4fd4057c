"""`aa_test`: the default verdict rule on real seed noise (an A/A test).

N seeds of one recipe (no arm differs) are split at random into a baseline and pseudo-arms, many
times, and each split is judged by exactly the arithmetic of `simulate_null` (fixed designs) and
`run_sequential` (the sequential loop): the share of splits with >= 1 improver/regressor is the
rule's family-wise false-positive rate on the noise training really makes, skew and tails
included (benchmarks/aa_real_noise.py trains the seeds).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from archaudit.errors import ConfigError
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.simulation.calibrate import audit_levels
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.null_kernel import family_outcomes
from archaudit.stats.simulation.sequential import (
    LoopState,
    SequentialRule,
    run_sequential,
)
from archaudit.stats.simulation.simulate import PanelRate, panel_rate, worst

MIN_SEEDS = 8


@dataclass(frozen=True)
class AATest(JsonResult):
    """False-positive rates of the default rule over random splits of real seeds."""

    n_seeds: int
    mean: float
    sd: float
    skew: float
    """Sample skewness (Fisher–Pearson, bias-corrected)."""
    kurtosis: float
    """Excess kurtosis (0 for normal noise; bias-corrected)."""
    splits: int
    alpha: float
    rates: tuple[PanelRate, ...]
    """One per design ("noise" holds the design's description)."""
    worst: PanelRate | None


def aa_designs(n_seeds: int) -> dict[str, AuditDesign | SequentialRule]:
    """The designs the tool offers by default that fit `n_seeds` seeds of one recipe."""
    arms = n_seeds - 4
    designs: dict[str, AuditDesign | SequentialRule] = {
        f"{n_seeds - 3} arms × 1 seed, baseline 3": AuditDesign((1,) * (n_seeds - 3), 3),
        f"{arms // 2} arms × 2 seeds, baseline 4": AuditDesign((2,) * (arms // 2), 4),
        f"{arms // 3} arms × 3 seeds, baseline 4": AuditDesign((3,) * (arms // 3), 4),
        f"{arms // 3} arms × 3 seeds, baseline 4, Dunnett": AuditDesign(
            (3,) * (arms // 3), 4, correction="dunnett"
        ),
    }
    mixed = (1,) * (arms // 6) + (2,) * (arms // 6) + (3,) * (arms // 6)
    if mixed:
        designs[f"mixed {list(mixed)}, baseline 4"] = AuditDesign(mixed, 4)
    designs[f"sequential: {arms // 4} arms ≤ 4 seeds, baseline 3 → 4"] = SequentialRule(
        max_seeds=4, baseline_seeds=3, baseline_max=4, calibrated=True
    )
    return designs


def aa_test(
    values: Sequence[float], *, splits: int = 4000, seed: int = 0, alpha: float = 0.05
) -> AATest:
    """Judge `splits` random splits of `values` (seeds of one recipe) under every design of
    `aa_designs`; a rate above α by two MC s.e. is flagged."""
    x = np.asarray(values, dtype=float)
    if len(x) < MIN_SEEDS or not np.all(np.isfinite(x)):
        raise ConfigError(f"an A/A test needs >= {MIN_SEEDS} finite seed values; got {len(x)}")
    rng = np.random.default_rng(seed)
    shuffled = x[rng.permuted(np.tile(np.arange(len(x)), (splits, 1)), axis=1)]
    rates = tuple(
        panel_rate(_false_positive_rate(design, shuffled, len(x)), splits, alpha, name)
        for name, design in aa_designs(len(x)).items()
    )
    return AATest(
        n_seeds=len(x),
        mean=float(x.mean()),
        sd=float(x.std(ddof=1)),
        skew=float(sps.skew(x, bias=False)),
        kurtosis=float(sps.kurtosis(x, bias=False)),
        splits=splits,
        alpha=alpha,
        rates=rates,
        worst=worst(rates),
    )


def _false_positive_rate(
    design: AuditDesign | SequentialRule, shuffled: np.ndarray, n_seeds: int
) -> float:
    """Share of splits (rows of `shuffled`) with >= 1 arm declared."""
    if isinstance(design, SequentialRule):
        arms = (n_seeds - design.baseline_cap) // design.max_seeds
        base = shuffled[:, : design.baseline_cap]
        rest = shuffled[:, design.baseline_cap : design.baseline_cap + arms * design.max_seeds]
        state, _, _, _ = run_sequential(design, base, rest.reshape(len(rest), arms, -1))
        return float(
            np.mean(np.any((state == LoopState.IMPROVER) | (state == LoopState.REGRESSOR), axis=1))
        )
    start, groups = design.baseline_seeds, []
    for n, count in sorted(Counter(design.arm_seeds).items()):
        block = shuffled[:, start : start + n * count]
        groups.append(block.reshape(len(block), count, n))
        start += n * count
    outcomes = family_outcomes(design, shuffled[:, : design.baseline_seeds], [], groups)
    declared = outcomes.declared(audit_levels(design, outcomes.bounds))
    return float(np.mean(np.any(declared, axis=1))) if declared.size else math.nan
