"""What no interval procedure can reach on `predict_coverage.py --shapes`' ladders: a lower bound
on a constant arm's mean width for any procedure that holds a shape within 5 points of its level.

A shape's ladder and a constant arm's (level b, any b) differ only in that arm's runs: its seeds
at scale s are N(β_s − Δ(u_s), σ²) against N(β_s − b, σ²), every other run (the baseline's, the
neighbours') has one distribution under both, independent of the arm's. The total-variation
distance between the two ladders is therefore that of the arm's per-scale means, normals with
one covariance: TV = 2Φ(D/2) − 1, D the Mahalanobis distance between their mean vectors. An
estimated σ changes nothing: it is a function of the same data, whose distance this is.

If a procedure's interval I holds the truth with probability ≥ 1 − a under both (g the shape's
Δ at the target, b the constant's), then under the constant P(I ∋ g) ≥ 1 − a − TV, so P(I ∋ g
and I ∋ b) ≥ 1 − 2a − TV and the constant arm's mean width is at least |g − b|·(1 − 2a − TV(b)),
for every b: the bound is the largest over b. `combined_width` sharpens it (Pratt's identity:
the mean width is the integral over target values of the chance the interval holds them, each at
least a Neyman–Pearson miss) for procedures that hold the shape at every offset as they hold
constants at every level. With a = the nominal miss + 0.05 (within 5 points), a (shape, cell)
is out of reach together with issue 55's sharpness goal when the larger bound at 80% exceeds
1.5 times the seed-noise-only 80% width.

Two distances (two classes of procedure):

- `ANY`: the baseline's loss curve β fixed as the simulation fixes it; the per-scale mean of
  the arm's n seeds has variance σ²/n. Valid for every procedure whatsoever.
- `CONTRASTS`: procedures that read each scale only through contrasts between its runs (Δ̂,
  within-run spreads: unchanged when every run at a scale moves by one amount, as a procedure
  that must work for any baseline curve does, `predict()` among them). The constant arm may
  then come with every run at each scale moved by c_s, and the closest such c_s leaves per-scale
  variance σ²·(n₀ + (K+1)·n)/(n·(n₀ + K·n)) with K neighbours of n seeds: σ²(1/n + 1/n₀), Δ̂'s
  own, for an arm alone with the baseline; towards σ²/n as neighbours pin the scale's level.
Both bounds above let the procedure know the shape's size: the cells hold it at σ/E 0.3, 1 and 3,
three sizes of one shape. `every_size_width` asks what a user needs instead, the shape held at
whatever size and offset it comes (the family b + k·Δ(u), every b and k, the constants among
them at k = 0). The least favourable member with target value t is the nearest in Mahalanobis
distance to the constant arm, |t|/s with s the standard deviation of the least-squares
prediction at the target in that two-parameter family; Pratt's integral is then closed:
2s(zΦ(z) + φ(z)). A shape flat on the ladder that moves beyond it (`late`) has s = ∞: no finite
interval holds it at every size. A (shape, cell) group is out of reach, with the sharpness cap,
when this bound exceeds the cap (`Bound.infeasible`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy import stats as sps

CAP = 1.5
"""Issue 55's must-show 2: a constant arm's mean 80% width at most 1.5 × the seed-noise-only."""
SLACK = 0.05
"""Coverage "within 5 points" of its level."""
SHARP_LEVEL = 0.8
"""The level the sharpness goal is stated at; other levels' bounds are reported, not judged."""
GRID = 4001
STEPS = 20001
"""Points of the integral over target values (the combined bound), over ±(gap + 12 SDs)."""


@dataclass(frozen=True)
class Bound:
    """The lower bounds on a constant arm's mean width, for one shape, cell and level."""

    distance: float
    """D between the shape's ladder and the constant's at the best level b of the TV bound."""
    tv: float
    level_b: float
    """The constant arm's level (in E) that gives the largest TV bound."""
    tv_width: float
    """|g − b|·(1 − 2a − TV(b)) at that b, in E."""
    width: float
    """The larger of the TV bound and `combined_width`, in E."""
    multiple: float
    """`width` over the seed-noise-only width at the same level."""
    every_size: float
    """`every_size_width`: the bound for a procedure that holds the shape at every size, in E."""
    every_size_multiple: float
    """`every_size` over the seed-noise-only width (∞ where the ladder does not show the shape)."""

    def infeasible(self, level: float) -> bool:
        """True when no procedure holds the shape within 5 points at every size and keeps
        constant arms within the sharpness cap (stated at the goal's level; at other levels only
        a shape no finite interval holds at every size)."""
        if level == SHARP_LEVEL:
            return self.every_size_multiple > CAP
        return math.isinf(self.every_size_multiple)


def scale_sd(noise: float, seeds: int, neighbours: int | None) -> float:
    """Per-scale standard deviation of the arm's mean (None: `ANY`) or of the least
    favourable contrast with `neighbours` other arms (`CONTRASTS`), baseline of `seeds` too."""
    if neighbours is None:
        return noise / math.sqrt(seeds)
    pinned = seeds + neighbours * seeds
    return noise * math.sqrt((pinned + seeds) / (seeds * pinned))


def total_variation(distance: float) -> float:
    """TV between two normals with one covariance, Mahalanobis distance `distance` apart."""
    return float(2.0 * sps.norm.cdf(distance / 2.0) - 1.0)


def tv_bounds(
    ladder: np.ndarray, target: float, sd: float, miss: float, b: np.ndarray
) -> np.ndarray:
    """|g − b|·(1 − 2a − TV(b)), floored at 0: the TV bound for constant arms at levels `b`."""
    distance = np.sqrt(np.sum((ladder[None, :] - b[:, None]) ** 2, axis=1)) / sd
    tv = 2.0 * sps.norm.cdf(distance / 2.0) - 1.0
    return np.abs(target - b) * np.maximum(0.0, 1.0 - 2.0 * miss - tv)


def tv_bound(ladder: np.ndarray, target: float, sd: float, level: float) -> tuple[float, float]:
    """(b, the bound at b): the largest TV bound over the constant's level b (a grid, then
    refined)."""
    miss = 1.0 - level + SLACK
    reach = 6.0 * sd * math.sqrt(len(ladder))
    lo = min(float(ladder.min()), target) - reach
    hi = max(float(ladder.max()), target) + reach
    grid = np.linspace(lo, hi, GRID)
    values = tv_bounds(ladder, target, sd, miss, grid)
    i = int(np.argmax(values))
    if values[i] <= 0.0:
        return float(np.mean(ladder)), 0.0
    step = grid[1] - grid[0]
    found = optimize.minimize_scalar(
        lambda b: -float(tv_bounds(ladder, target, sd, miss, np.array([b]))[0]),
        bounds=(grid[i] - step, grid[i] + step),
        method="bounded",
        options={"xatol": 1e-12},
    )
    # The ladder's mean (the nearest constant, where TV has its kink) is a candidate too.
    candidates = np.array([grid[i], found.x, float(np.mean(ladder))])
    scores = tv_bounds(ladder, target, sd, miss, candidates)
    j = int(np.argmax(scores))
    return float(candidates[j]), float(scores[j])


def shape_bound(
    truth: Callable[[np.ndarray], np.ndarray],
    cell: tuple[int, int, float, int],
    level: float,
    neighbours: int | None,
    unit: float,
) -> Bound:
    """The bound for a shape Δ(u) in a cell (scales, seeds, σ/E, target factor), `unit` the
    cell's seed-noise-only width at `level`."""
    scales, seeds, noise, factor = cell
    u = np.arange(scales, dtype=float)
    target = float(truth(np.array([scales - 1 + math.log2(factor)]))[0])
    ladder, sd = truth(u), scale_sd(noise, seeds, neighbours)
    b, by_tv = tv_bound(ladder, target, sd, level)
    distance = float(np.sqrt(np.sum((ladder - b) ** 2)) / sd)
    width = max(by_tv, combined_width(ladder, target, sd, level))
    every = every_size_width(ladder, target, sd, level)
    return Bound(
        distance, total_variation(distance), b, by_tv, width, width / unit, every, every / unit
    )


def family_sd(ladder: np.ndarray, target: float, sd: float) -> float:
    """The standard deviation of the least-squares prediction at the target in the family
    b + k·Δ(u), the scales' Δ̂ each of standard deviation `sd` (∞ where Δ is flat on the ladder
    but not at the target; a shape flat everywhere is a constant: the mean's)."""
    centred = ladder - float(np.mean(ladder))
    spread = float(np.sum(centred**2))
    gap = target - float(np.mean(ladder))
    if spread <= 1e-12 * max(1.0, float(np.max(np.abs(ladder)))) ** 2:
        return sd / math.sqrt(len(ladder)) if abs(gap) <= 1e-12 else math.inf
    return sd * math.sqrt(1.0 / len(ladder) + gap**2 / spread)


def every_size_width(ladder: np.ndarray, target: float, sd: float, level: float) -> float:
    """Pratt's least mean width at a constant arm (in E) for procedures that hold the shape at
    every size and offset within 5 points of `level`: 2s(zΦ(z) + φ(z)), s = `family_sd`."""
    z = float(sps.norm.ppf(level - SLACK))
    s = family_sd(ladder, target, sd)
    return 2.0 * s * (z * float(sps.norm.cdf(z)) + float(sps.norm.pdf(z)))


def combined_width(ladder: np.ndarray, target: float, sd: float, level: float) -> float:
    """A sharper bound (in E) for procedures that hold every constant arm and the shape at
    every offset (Δ + c for every c, as they hold constants at every level).

    Pratt (1961): a constant arm's mean width is ∫ P(t ∈ I) dt over target values t. Each
    P(t ∈ I) is the miss of a level-a test of a truth with target t (the constant at t, the
    shape moved to target t) against the constant arm, so at least the Neyman–Pearson
    β(t) = Φ(z_{1−a} − D(t)); and an interval holding b (≥ 1 − a) and c (≥ β(c)) holds every
    t between them (≥ β(c) − a). The arm's level b is 0 here: the bound is the same at every b.
    """
    miss = 1.0 - level + SLACK
    z = float(sps.norm.ppf(1.0 - miss))
    reach = abs(target - float(ladder.mean())) + float(np.ptp(ladder)) + 12.0 * sd
    t = np.linspace(-reach, reach, STEPS)
    constant = math.sqrt(len(ladder)) * np.abs(t) / sd
    shape = np.sqrt(np.sum((ladder[None, :] - target + t[:, None]) ** 2, axis=1)) / sd
    beta = sps.norm.cdf(z - np.minimum(constant, shape))
    above = np.maximum.accumulate(beta[::-1])[::-1]  # the best c ≥ t, for t > 0
    below = np.maximum.accumulate(beta)  # the best c ≤ t, for t < 0
    joint = np.where(t >= 0.0, above, below) - miss
    return float(np.trapezoid(np.maximum(beta, np.maximum(joint, 0.0)), t))


def straddle_width(gap: float, sd: float, scales: int, level: float) -> float:
    """A width that is attained (in E) where the shape's ladder is a constant's and its target
    lies `gap` below (`late`): the interval [m − gap − h, m + h] around the mean m of the `scales`
    Δ̂ (each of standard deviation `sd`), h set so that it holds the constant and the shape each
    with probability 1 − a exactly (within 5 points of `level`). h < 0 where the gap is wide."""
    miss = 1.0 - level + SLACK
    tau = sd / math.sqrt(scales)

    def short(h: float) -> float:
        return float(sps.norm.cdf((gap + h) / tau) - sps.norm.cdf(-h / tau)) - (1.0 - miss)

    h = optimize.brentq(short, -gap / 2.0, gap + 10.0 * tau)
    return gap + 2.0 * h
