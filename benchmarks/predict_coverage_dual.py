"""Is Pratt's every-size bound (`predict_coverage_bounds.every_size_width`) loose where it is
below issue 55's cap? A Lagrangian dual for shift-equivariant procedures that also keep a
constant arm's coverage at most 85%.

A procedure that keeps its sharpness for constant arms at every level can be replaced by a
shift-equivariant one that is no worse (the translations are an amenable group: Hunt–Stein), so
its interval is Ȳ + D(T): Ȳ the mean of the scales' Δ̂, T the standardised projection of their
residuals on the shape's (T ~ N(m, 1) for the member of size m), D(T) an interval. In units of
τ = SD(Ȳ) the member m's target lies m·r − Z from Ȳ, Z ~ N(0, 1) independent of T, r =
(g_T − ḡ)·√S/‖g − ḡ‖. The primal: minimise E₀|D(T)| subject to coverage ≥ 75% at every m of a
grid and ≤ 85% at m = 0. Every choice of multipliers gives a lower bound (weak duality): the
Lagrangian separates over T, and per T the best interval [lo, hi] minimises A(hi) − A(lo) on a
grid of x, whose spacing costs at most the Lipschitz constant of A times the spacing (subtracted).
Projected supergradient ascent on the multipliers; the best value seen is reported.

    PYTHONPATH=src:benchmarks python benchmarks/predict_coverage_dual.py
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from predict_coverage import TRUTHS, seed_only_width
from predict_coverage_bounds import (
    CAP,
    SHARP_LEVEL,
    every_size_width,
    family_sd,
    scale_sd,
)

FLOOR, TOP = 0.75, 0.85
"""Coverage at least FLOOR for every member, at most TOP for the constant (80% within 5 points)."""
GROUPS = (
    ("growing", 4, 4, 0), ("crossing", 5, 16, 0), ("crossing", 4, 16, 6),
    ("growing", 5, 4, 0), ("growing", 4, 4, 6),
)  # fmt: skip
"""(shape, scales, target factor, neighbours): the reachable groups whose Pratt bound is
nearest the cap."""
SEEDS = 2
"""Seeds per arm and baseline (the multiples depend on them only through the neighbours'
pinning of each scale's level)."""


@dataclass(frozen=True)
class Grid:
    m: np.ndarray
    x: np.ndarray
    weight0: np.ndarray
    """(nT,) the quadrature weight of each T under the constant (m = 0)."""
    weight: np.ndarray
    """(nT, nm) under each member."""
    held: np.ndarray
    """(nm, nx) P(Z ≤ x − m·r)."""
    held0: np.ndarray
    step: float


def grid(r: float, reach: float = 8.0, members: int = 33, t_step: float = 0.05) -> Grid:
    m = np.linspace(-reach, reach, members)
    t = np.arange(-reach - 7.0, reach + 7.0 + 1e-9, t_step)
    step = 0.02
    x = np.arange(-(reach * abs(r) + 7.0), reach * abs(r) + 7.0 + 1e-9, step)
    return Grid(
        m=m, x=x, weight0=sps.norm.pdf(t) * t_step,
        weight=sps.norm.pdf(t[:, None] - m[None, :]) * t_step,
        held=sps.norm.cdf(x[None, :] - (m * r)[:, None]), held0=sps.norm.cdf(x), step=step,
    )  # fmt: skip


def best_intervals(g: Grid, lam: np.ndarray, mu: float) -> tuple[float, np.ndarray, float]:
    """(the Lagrangian's separable part, less the grid's slack; coverage per member; the
    constant's coverage) at the intervals that minimise it for these multipliers."""
    a = (
        g.weight0[:, None] * g.x[None, :]
        - (g.weight * lam[None, :]) @ g.held
        + mu * g.weight0[:, None] * g.held0[None, :]
    )
    running = np.maximum.accumulate(a, axis=1)
    hi = np.argmin(a - running, axis=1)
    rows = np.arange(len(a))
    value = (a - running)[rows, hi]
    lo = np.array([int(np.argmax(a[i, : h + 1])) for i, h in enumerate(hi)])
    empty = value >= 0.0
    covered = np.where(empty[None, :], 0.0, g.held[:, hi] - g.held[:, lo])
    constant = float(np.sum(np.where(empty, 0.0, g.held0[hi] - g.held0[lo]) * g.weight0))
    lipschitz = g.weight0 + (g.weight @ lam + mu * g.weight0) * sps.norm.pdf(0.0)
    slack = float(np.sum(lipschitz)) * g.step
    return float(np.sum(value)) - slack, np.sum(covered * g.weight.T, axis=1), constant


def dual_bound(r: float, iterations: int = 600) -> float:
    """The best dual value found: a lower bound on the constant arm's mean width, in τ."""
    g = grid(r)
    lam, mu, best = np.full(len(g.m), 0.05), 0.01, -math.inf
    for i in range(iterations):
        part, covered, constant = best_intervals(g, lam, mu)
        best = max(best, part + FLOOR * float(lam.sum()) - TOP * mu)
        step = 0.5 / math.sqrt(1.0 + i)
        lam = np.maximum(0.0, lam + step * (FLOOR - covered))
        mu = max(0.0, mu + step * (constant - TOP))
    return best


def main() -> None:
    for name, scales, factor, neighbours in GROUPS:
        u = np.arange(scales, dtype=float)
        ladder = TRUTHS[name](u)
        target = float(TRUTHS[name](np.array([scales - 1 + math.log2(factor)]))[0])
        # in units of σ (the multiples do not depend on it): τ = SD(Ȳ), s = the family's SD
        sd = scale_sd(1.0, SEEDS, neighbours)
        tau, unit = sd / math.sqrt(scales), seed_only_width(1.0, SEEDS, SHARP_LEVEL)
        r = math.sqrt((family_sd(ladder, target, sd) / tau) ** 2 - 1.0)
        pratt = every_size_width(ladder, target, sd, SHARP_LEVEL)
        print(
            f"{name}, {scales} scales, {factor}×, {neighbours} neighbours: r {r:.2f}; dual "
            f"{dual_bound(r) * tau / unit:.2f} × the seed-noise-only width, Pratt's "
            f"{pratt / unit:.2f} (cap {CAP:g})",
            flush=True,
        )


if __name__ == "__main__":
    main()
