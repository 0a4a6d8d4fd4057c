"""The stability verdict's primary test: a stratified rank contrast (docs/stability.md).

Declared before the stored stress-tiny sweep was judged by it. Every run of a sweep is scored
on three measures it already logs: whether it broke (diverged, warned of a rising gradient
norm, or collapsed: 1, else 0), its final loss min(L, L₀), and the level of its gradient norm
(the mean of ln ‖g‖ over the second half of its steps); a run that broke scores +∞ on the
last two. Within each stratum (a rate of the grid; for the depth stress, a depth at one rate)
the arm's and the baseline's runs are ranked together, and D = (mean rank of the arm's − the
baseline's) / runs in the stratum. The statistic of a measure is the mean of D over the
**high** strata H (weight 1/|H|: the upper half of the rate grid; the depths above the
sweep's), the others weighing 0: the test asks whether the arm's runs break, end at a higher
loss or carry a larger gradient norm than the baseline's *at the same high rate*. (A contrast
against the low rates, to cancel differences every rate shares, cost too much power: its low
strata add noise as large as the effect.)

Each measure's T is standardised by its permutation SD; the statistic is the largest |z|. Its
null distribution draws the same relabelling of each stratum's runs for every measure
(`permutations` Monte-Carlo draws), so the test is exact under the null "at every stratum the
arm's runs and the baseline's are exchangeable", whatever the measures' correlation or the
breaks' ties. The direction is the sign of the largest z: positive = the arm is more fragile.
One such test per arm forms the family the verdict corrects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

MEASURES = ("unstable", "loss", "grad_norm")
"""The primary test's measures, in the order of `FragilityTest.z`."""


@dataclass(frozen=True)
class Stratum:
    """The scores of the arm's and the baseline's runs at one rate (or depth), and the
    stratum's weight in the contrast."""

    arm: tuple[tuple[float, ...], ...]
    """Per run of the arm: its score on each of `MEASURES` (+∞ for a run that broke)."""
    base: tuple[tuple[float, ...], ...]
    weight: float


@dataclass(frozen=True)
class FragilityTest:
    p: float
    """Two-sided: (1 + #draws at least as extreme) / (1 + draws); 1 when nothing varies."""
    direction: int
    """+1: the arm degrades more at the high strata (more fragile); −1: less; 0: no test."""
    measure: str
    """The measure with the larger |z| (it decides the direction); "" when none varies."""
    z: tuple[float, ...]
    """Per measure of `MEASURES`: the contrast over its permutation SD (NaN: not testable)."""


def high_weights(values: Sequence[float], reference: float) -> tuple[float, ...]:
    """1/|H| for the values above `reference` (the high strata H), 0 for the others."""
    high = [v > reference * (1 + 1e-9) for v in values]
    return tuple(1 / sum(high) if h else 0.0 for h in high)


def smallest_p(sizes: Sequence[tuple[int, int]]) -> float:
    """The smallest p the test can give on high strata of (arm, baseline) runs `sizes`: the
    observed split and its mirror among every split of each stratum's runs (exact; the
    permutation p only estimates it)."""
    splits = math.prod(math.comb(a + b, a) for a, b in sizes)
    return min(1.0, 2.0 / splits)


def fragility_test(
    strata: Sequence[Stratum],
    permutations: int,
    seed: int = 0,
    measures: Sequence[str] = MEASURES,
) -> FragilityTest:
    """The stratified rank contrast of the module docstring, on `strata` whose runs are scored
    on `measures` (the primary test's by default; `logits` uses it on the logged signals)."""
    rng = np.random.default_rng(seed)
    observed = np.zeros(len(measures))
    draws = np.zeros((permutations, len(measures)))
    usable = np.array([_varies(strata, m) for m in range(len(measures))])
    for stratum in strata:
        if stratum.weight == 0 or not stratum.arm or not stratum.base:
            continue
        n_a = len(stratum.arm)
        scores = np.array(stratum.arm + stratum.base, dtype=float)  # (runs, measures)
        ranks = np.column_stack([_ranks(scores[:, m]) for m in range(len(measures))])
        ranks /= len(scores)
        observed += stratum.weight * _rank_gap(ranks, n_a)
        order = rng.random((permutations, len(scores))).argsort(axis=1)
        shuffled = ranks[order]  # (draws, runs, measures)
        draws += stratum.weight * (shuffled[:, :n_a].mean(axis=1) - shuffled[:, n_a:].mean(axis=1))
    spread = draws.std(axis=0)
    usable &= spread > 1e-12
    if not usable.any():
        return FragilityTest(1.0, 0, "", tuple(math.nan for _ in measures))
    z = np.where(usable, observed / np.where(usable, spread, 1.0), np.nan)
    z_draws = np.abs(draws[:, usable] / spread[usable]).max(axis=1)
    largest = int(np.nanargmax(np.abs(z)))
    statistic = abs(z[largest])
    extreme = int(np.sum(z_draws >= statistic - 1e-9))
    p = (1 + extreme) / (1 + permutations)
    direction = int(np.sign(z[largest]))
    return FragilityTest(p, direction, measures[largest], tuple(float(v) for v in z))


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (ties share theirs; +∞ ranks last); NaN only when a value is NaN."""
    if np.isnan(values).any():
        return np.full(len(values), np.nan)
    return sps.rankdata(values)


def _rank_gap(ranks: np.ndarray, n_a: int) -> np.ndarray:
    return ranks[:n_a].mean(axis=0) - ranks[n_a:].mean(axis=0)


def _varies(strata: Sequence[Stratum], measure: int) -> bool:
    """A measure is testable when every run of every weighted stratum has a number (a run
    that broke has +∞)."""
    values = [run[measure] for s in strata if s.weight != 0 for run in (*s.arm, *s.base)]
    return bool(values) and not any(math.isnan(v) for v in values)
