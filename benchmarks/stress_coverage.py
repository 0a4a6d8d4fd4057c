"""Does the LR sensitivity's printed 95% interval hold its coverage? Known-truth sweeps, scored.

Each simulated sweep has R rates at x = 0, 1/(R−1), …, 1 (log η rescaled) and n seeds per rate.
The mean final loss is U-shaped, L_opt + a·|x − x*|^p: a **flat** bottom (p = 2, a = 1.5:
several rates near the optimum) or a **sharp** one (p = 1, a = 3); the optimum x* **on** a grid
point or **between** two. Beyond the **edge of stability** a seed diverges with a probability
rising with x (edge **inside**: a logistic centred 0.15 below the top rate, so the top rate
diverges in most seeds, often in all: a rate with zero spread; edge **beyond**: centred 0.85
above it, no run diverges); a diverged run counts as L₀. Seed
noise: **normal** (σ), **t3** (heavy-tailed, scaled to the same σ) or **growing** (normal, σ
times 1 + 6·P(diverge): the spread of rates near the edge). The truth is S of the expected
clamped curve: per rate E over seeds of min(L, L₀) (by quadrature of the noise law), then mean
minus min. Every sweep goes through `stability.sensitivity_interval`, the function `measure`
prints, and through the construction it replaced (a t interval of the plug-in contrast with the
best rate held fixed and the seed variance pooled over rates, kept here as the "before").

ΔS: the arm has the same cell but a sharper bottom and an edge 0.25 earlier (a different
truth); its interval is the one `stress_checks` prints (the two arms' half-widths added in
quadrature, below and above apart).

    PYTHONPATH=src python benchmarks/stress_coverage.py            # JSON + docs/stability.md
    PYTHONPATH=src python benchmarks/stress_coverage.py --reps 300 --no-doc   # quick look
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import integrate
from scipy import stats as sps

from archaudit.stats.analyses.stability import SweepLosses, sensitivity_interval

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs" / "stability.md"
OUT = HERE / "stress_coverage.json"
L_OPT, L0, SIGMA, CONFIDENCE = 3.0, 5.5, 0.08, 0.95
SHAPES = {"flat": (2.0, 1.5), "sharp": (1.0, 3.0)}
"""Name → (power p, scale a) of the mean curve L_opt + a·|x − x*|^p."""
NOISES = ("normal", "t3", "growing")
EDGES = {"inside": 0.0, "beyond": -1.0}
"""Where the edge of stability lies: its shift below 0.15 under the top rate."""
RATES, SEEDS = (4, 6, 8), (2, 3, 5)
EDGE_WIDTH = 0.06


@dataclass(frozen=True)
class Truth:
    """One arm's law: per rate the mean loss, the noise scale, the chance to diverge."""

    mean: np.ndarray
    scale: np.ndarray
    p_diverge: np.ndarray
    noise: str

    def expected_clamped(self) -> np.ndarray:
        """E over seeds of min(L, L₀) per rate."""
        law = _law(self.noise)
        kept = [
            L0 - s * integrate.quad(law.cdf, -np.inf, (L0 - m) / s)[0]
            for m, s in zip(self.mean, self.scale, strict=True)
        ]
        return self.p_diverge * L0 + (1 - self.p_diverge) * np.array(kept)

    def sensitivity(self) -> float:
        curve = self.expected_clamped()
        return float(curve.mean() - curve.min())

    def draw(self, rng: np.random.Generator, reps: int, seeds: int) -> np.ndarray:
        """(reps, rates, seeds) clamped final losses."""
        shape = (reps, len(self.mean), seeds)
        noise = _law(self.noise).rvs(size=shape, random_state=rng)
        loss = self.mean[:, None] + self.scale[:, None] * noise
        diverged = rng.random(shape) < self.p_diverge[:, None]
        return np.where(diverged, L0, np.minimum(loss, L0))


def _law(noise: str):
    """The seed noise's standard law (unit variance)."""
    return sps.t(3, scale=1 / np.sqrt(3)) if noise == "t3" else sps.norm()


def truth(rates: int, shape: str, between: bool, noise: str, edge_shift: float = 0.0) -> Truth:
    x = np.linspace(0, 1, rates)
    step = x[1]
    optimum = x[rates // 2 - 1] + (step / 2 if between else 0.0)
    power, scale = SHAPES[shape]
    mean = L_OPT + scale * np.abs(x - optimum) ** power
    edge = 1 - 0.15 - edge_shift
    p_diverge = sps.logistic.cdf((x - edge) / EDGE_WIDTH)
    spread = SIGMA * (1 + 6 * p_diverge) if noise == "growing" else np.full(rates, SIGMA)
    return Truth(mean, spread, p_diverge, "normal" if noise == "growing" else noise)


def pooled_fixed_best(losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The replaced construction: the plug-in contrast Σ c·L̄, c = 1/R − [η = best], the best
    rate held fixed, the seed variance pooled over rates, t with the pooled df."""
    _, rates, seeds = losses.shape
    means = losses.mean(axis=2)
    dof = rates * (seeds - 1)
    pooled = losses.var(axis=2, ddof=1).mean(axis=1)
    c2 = (rates - 1) * (1 / rates) ** 2 + (1 - 1 / rates) ** 2
    half = sps.t.ppf(0.5 + CONFIDENCE / 2, dof) * np.sqrt(pooled * c2 / seeds)
    s = means.mean(axis=1) - means.min(axis=1)
    return s - half, s + half


def current(losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The library's interval, over the batch at once."""
    sweeps = SweepLosses(losses, losses >= L0, np.full(losses.shape, L0))
    return sensitivity_interval(sweeps, CONFIDENCE)


def delta_interval(
    arm: tuple[np.ndarray, np.ndarray, np.ndarray], base: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """ΔS's interval as `stress_checks` prints it, from (S, lo, hi) of each arm."""
    (sa, la, ha), (sb, lb, hb) = arm, base
    delta = sa - sb
    return delta - np.hypot(sa - la, hb - sb), delta + np.hypot(ha - sa, sb - lb)


@dataclass(frozen=True)
class Cell:
    edge: str
    rates: int
    seeds: int
    shape: str
    optimum: str
    noise: str
    truth_s: float
    truth_delta: float
    cover_before: float
    cover_after: float
    width_before: float
    """The median width of the replaced interval."""
    width_after: float
    cover_delta_before: float
    cover_delta_after: float
    width_delta_before: float
    width_delta_after: float


def score_cell(
    rng: np.random.Generator,
    reps: int,
    edge: str,
    rates: int,
    seeds: int,
    shape: str,
    optimum: str,
    noise: str,
) -> Cell:
    shift = EDGES[edge]
    base = truth(rates, shape, optimum == "between", noise, edge_shift=shift)
    arm = truth(rates, "sharp", optimum == "between", noise, edge_shift=shift + 0.25)
    sweeps = {"base": base.draw(rng, reps, seeds), "arm": arm.draw(rng, reps, seeds)}
    s = {k: v.mean(axis=2).mean(axis=1) - v.mean(axis=2).min(axis=1) for k, v in sweeps.items()}
    before = {k: (s[k], *pooled_fixed_best(v)) for k, v in sweeps.items()}
    after = {k: (s[k], *current(v)) for k, v in sweeps.items()}
    true_s, true_d = base.sensitivity(), arm.sensitivity() - base.sensitivity()

    def cover(lo: np.ndarray, hi: np.ndarray, value: float) -> float:
        return float(np.mean((lo <= value) & (value <= hi)))

    d_before = delta_interval(before["arm"], before["base"])
    d_after = delta_interval(after["arm"], after["base"])
    return Cell(
        edge,
        rates,
        seeds,
        shape,
        optimum,
        noise,
        true_s,
        true_d,
        cover(*before["base"][1:], true_s),
        cover(*after["base"][1:], true_s),
        float(np.median(before["base"][2] - before["base"][1])),
        float(np.median(after["base"][2] - after["base"][1])),
        cover(*d_before, true_d),
        cover(*d_after, true_d),
        float(np.median(d_before[1] - d_before[0])),
        float(np.median(d_after[1] - d_after[0])),
    )


def run(reps: int, seed: int) -> list[Cell]:
    rng = np.random.default_rng(seed)
    grid = itertools.product(EDGES, RATES, SEEDS, SHAPES, ("on", "between"), NOISES)
    return [score_cell(rng, reps, *cell) for cell in grid]


def table(cells: list[Cell], reps: int) -> str:
    """Coverage (%) of S and ΔS before → after, the worst cell of each (rates, seeds), and the
    median widths."""
    lines = [
        "| edge | rates | seeds | S: worst cell before → after | S: mean before → after "
        "| ΔS: worst before → after | median width of S before → after |",
        "|---|---|---|---|---|---|---|",
    ]
    for edge, rates, seeds in itertools.product(EDGES, RATES, SEEDS):
        group = [c for c in cells if (c.edge, c.rates, c.seeds) == (edge, rates, seeds)]
        worst_b = min(group, key=lambda c: c.cover_before)
        worst_a = min(group, key=lambda c: c.cover_after)
        lines.append(
            f"| {edge} | {rates} | {seeds} "
            f"| {100 * worst_b.cover_before:.1f} ({_name(worst_b)}) → "
            f"{100 * worst_a.cover_after:.1f} ({_name(worst_a)}) "
            f"| {100 * np.mean([c.cover_before for c in group]):.1f} → "
            f"{100 * np.mean([c.cover_after for c in group]):.1f} "
            f"| {100 * min(c.cover_delta_before for c in group):.1f} → "
            f"{100 * min(c.cover_delta_after for c in group):.1f} "
            f"| {np.median([c.width_before for c in group]):.3g} → "
            f"{np.median([c.width_after for c in group]):.3g} |"
        )
    return "\n".join(lines) + f"\n\n{reps} sweeps per cell; 12 cells per row.\n"


def _name(cell: Cell) -> str:
    return f"{cell.shape}, {cell.optimum}, {cell.noise}"


def write_doc(text: str) -> None:
    start, end = "<!-- coverage:start -->", "<!-- coverage:end -->"
    doc = DOCS.read_text()
    if start not in doc:
        raise SystemExit(f"{DOCS}: no {start} marker; add the markers where the table goes")
    block = f"{start}\n{text}{end}"
    DOCS.write_text(re.sub(f"{re.escape(start)}.*?{re.escape(end)}", block, doc, flags=re.S))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    cells = run(args.reps, args.seed)
    text = table(cells, args.reps)
    print(text)
    if not args.no_doc:
        record = {"reps": args.reps, "seed": args.seed, "cells": [asdict(c) for c in cells]}
        OUT.write_text(json.dumps(record, indent=1) + "\n")
        write_doc(text)


if __name__ == "__main__":
    main()
