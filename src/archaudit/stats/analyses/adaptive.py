"""Adaptive seeding: per arm, could one more seed still change its verdict?

The next seed of an arm is predicted from its current mean and the noise floor:
x ~ N(mean, σ²·(1 + 1/n)). For an even grid of that distribution's quantiles the arm is re-judged
with the extra seed, through the same `compare_arm` + `decide` as `judge`. The other arms are
held fixed, and σ and the family's test are recomputed with the extra seed. `p_change` is the
share of the grid whose verdict differs from today's. Deterministic: no random draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from archaudit.stats.judging.family import collect_family
from archaudit.stats.judging.judgement import Judgement
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import TableLike, load_table
from archaudit.stats.records.verdicts import INCOMPLETE, Verdict


@dataclass(frozen=True)
class ArmAdvice(JsonResult):
    """Whether another seed of this arm is worth running."""

    arm: str
    verdict: Verdict
    n_seeds: int
    p_change: float
    """Probability that one more seed changes the verdict (NaN when the arm was not tested)."""
    add_seed: bool


@dataclass(frozen=True)
class SeedingAdvice(JsonResult):
    """Advice for every arm of one judgement."""

    metric: str
    scale: str
    threshold: float
    arms: tuple[ArmAdvice, ...]


def adaptive_seeding(
    table: TableLike, judgement: Judgement, *, threshold: float = 0.05, grid: int = 100
) -> SeedingAdvice:
    """Advise, per arm, whether another seed could still change `judgement`'s verdict.

    An incomplete arm always gets "add seed" (finish its runs). A diverged one never does.
    """
    table = load_table(table)
    family = collect_family(table, judgement.metric, judgement.options)
    tested = family.tested
    quantiles = ndtri((np.arange(grid) + 0.5) / grid)
    change = {}
    for index, sample in enumerate(tested):
        current = judgement.arm(sample.arm).verdict
        spread = family.noise.sigma * math.sqrt(1.0 + 1.0 / len(sample.values))
        changed = 0
        for next_value in sample.mean + spread * quantiles:
            trial = family.grown(sample.arm, np.append(sample.values, next_value))
            tests = [trial.compare(s.values) for s in trial.tested]
            _, verdicts = trial.decide(tests)
            changed += verdicts[index] != current
        change[sample.arm] = changed / grid
    advice = []
    for verdict in judgement.arms:
        p_change = change.get(verdict.arm, math.nan)
        advice.append(
            ArmAdvice(
                arm=verdict.arm,
                verdict=verdict.verdict,
                n_seeds=verdict.n_seeds,
                p_change=p_change,
                add_seed=verdict.verdict == INCOMPLETE or p_change >= threshold,
            )
        )
    return SeedingAdvice(
        metric=judgement.metric, scale=judgement.scale, threshold=threshold, arms=tuple(advice)
    )
