"""How much narrower than the slope rule can any interval be that holds what the rule holds?
The least mean width of a quiet arm's 80% interval, by linear programming, beside the rule's.

The slope rule (`slope_rule`) sees an arm through A (its Δ̂ at the largest scale) and t (its
slope in standard errors); in units of σ_A, given the true slope size γ, t ~ N(γ, 1) and A's
error is N(ρ·(t − γ), 1 − ρ²), and the truth at the target lies λ·κ·γ beyond the truth at the
largest scale. An arm's Δ along the ladder is otherwise free, so no other summary of the ladder
tells the target apart; a procedure that keeps its width at every level of A can be replaced by
one of the form A + S(t) that is no worse (translations: Hunt–Stein). A randomised S is a
function x(t, u) ∈ [0, 1], the chance that A + u is in the interval, and both its mean width at
γ = 0 and its coverage at each (γ, λ) are linear in x: on a grid of (t, u), a linear programme.
Its optimum is the least mean width of every procedure, randomised ones included, that holds
the same constraints (the grid's sizes γ and continuations λ; to the grid's quadrature, which
halving both steps moved by under 0.1%: the record's `grid_check`).

Four sets of constraints, each at 80% (the level issue 55 states its sharpness at):

- the rule's: every size in `slope_rule.SIZES` (both signs) at λ ∈ `_LAMBDAS` held at 80%, the
  ends of `CONTINUATION` covered at most 80% + `OVER`;
- lines only: λ = 1 alone, no upper cap (what holding the `crossing` arm at every size asks);
- within 5 points: every (γ, λ) held at 75% and the ends at most 85% (issue 55's tolerance);
- `growing`'s continuation alone (λ 1.53-2.01 by cell, `continuation`; no cap): what holding
  that shape at every size would ask.

    PYTHONPATH=src:benchmarks python benchmarks/predict_rule_optimum.py    # writes docs/predict.md
    PYTHONPATH=src:benchmarks python benchmarks/predict_rule_optimum.py --table  # SHAPES changed
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize, sparse
from scipy import stats as sps

from archaudit.stats.predictions import slope_rule
from archaudit.stats.predictions.ladder_fit import LadderArrays
from doc_blocks import replace_block
from predict_coverage import TRUTHS
from predict_coverage_bounds import SHARP_LEVEL as LEVEL
from predict_coverage_bounds import SLACK as TOLERANCE

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "predict.md"
RECORD = ROOT / "benchmarks" / "predict_rule_optimum.json"
SHAPES = ROOT / "benchmarks" / "predict_coverage-shapes-wave17.json"
"""The coverage benchmark's record: the widths it measured, σ estimated, beside the optimum."""
QUIET = ("constant", "null")
SHARP_NOISE = 0.3
"""The σ/E at which issue 55 states its sharpness."""
BEGIN, END = "<!-- predict_rule_optimum.py: begin -->", "<!-- predict_rule_optimum.py: end -->"
UNIT = 2.0 * float(sps.norm.ppf((1.0 + LEVEL) / 2.0))
"""The seed-noise-only interval's width at LEVEL, 2·z·σ_A, in units of σ_A: widths are over it."""
REACH = 5.5
"""Standard deviations of t and of A's error that the grid spans around each mean."""


@dataclass(frozen=True)
class Constraints:
    name: str
    lambdas: tuple[float, ...]
    floor: float
    top: float | None
    """The ends' (first and last λ) most coverage, or none."""


def continuation(shape: str, scales: int, factor: int) -> float:
    """λ of a known-truth shape (`predict_coverage.TRUTHS`): its change from the largest scale to
    the target over what its least-squares line along the ladder says."""
    u = np.arange(scales, dtype=float)
    slope = float(np.polyfit(u, TRUTHS[shape](u), 1)[0])
    reach = math.log2(factor)
    far = TRUTHS[shape](np.array([u[-1], u[-1] + reach]))
    return float(far[1] - far[0]) / (slope * reach)


def constraint_sets(scales: int, factor: int) -> tuple[Constraints, ...]:
    rule = tuple(float(v) for v in slope_rule._LAMBDAS)
    return (
        Constraints("the rule's", rule, LEVEL, LEVEL + slope_rule.OVER),
        Constraints("lines only", (1.0,), LEVEL, None),
        Constraints("within 5 points", rule, LEVEL - TOLERANCE, LEVEL + TOLERANCE),
        Constraints("growing only", (continuation("growing", scales, factor),), LEVEL, None),
    )


NAMES = tuple(c.name for c in constraint_sets(4, 4))


def design(scales: int, factor: int) -> slope_rule.RuleDesign:
    """The design of an arm on the coverage benchmark's ladder (`predict_coverage.sim_ladder`:
    scales doubling, one σ at every scale), its target `factor` × the largest scale."""
    x = np.arange(scales) * math.log(2.0)
    flat = np.ones((2, scales))
    ladder = LadderArrays(x, np.zeros((2, scales)), 2 * flat, np.ones(scales), flat[0])
    target = float(x[-1] + math.log(factor))
    return slope_rule.arm_slopes(ladder, target, slope_rule.EXACT_DOF).designs[0]


def least_width(
    d: slope_rule.RuleDesign, c: Constraints, t_step: float = 0.2, u_step: float = 0.1
) -> float:
    """The least mean width at γ = 0, over UNIT, of a procedure A + S(t) under `c`, on a grid of
    these steps."""
    s = math.sqrt(1.0 - d.rho**2)
    sizes = np.concatenate([-slope_rule.SIZES[:0:-1], slope_rule.SIZES])
    span = float(slope_rule.SIZES[-1]) + REACH
    t = np.arange(-span, span + 1e-9, t_step)
    far = max(c.lambdas) * d.kappa * float(slope_rule.SIZES[-1]) + REACH * (d.rho + s) + 1.0
    u = np.arange(-far, far + 1e-9, u_step)
    rows, columns, values, bound = [], [], [], []

    def coverage_row(lam: float, gamma: float, sign: float, limit: float) -> None:
        near = np.nonzero(np.abs(t - gamma) < REACH)[0]
        for i in near:
            mean = lam * d.kappa * gamma - d.rho * (t[i] - gamma)
            cells = np.nonzero(np.abs(u - mean) < REACH * s)[0]
            mass = sps.norm.pdf(t[i] - gamma) * t_step * sps.norm.pdf(u[cells], mean, s) * u_step
            rows.append(np.full(len(cells), len(bound)))
            columns.append(i * len(u) + cells)
            values.append(sign * mass)
        bound.append(sign * limit)

    for lam in c.lambdas:
        for gamma in sizes:
            coverage_row(lam, float(gamma), -1.0, c.floor)  # coverage ≥ floor
            if c.top is not None and lam in (c.lambdas[0], c.lambdas[-1]):
                coverage_row(lam, float(gamma), 1.0, c.top)
    matrix = sparse.csr_matrix(
        (np.concatenate(values), (np.concatenate(rows), np.concatenate(columns))),
        shape=(len(bound), len(t) * len(u)),
    )
    width = np.repeat(sps.norm.pdf(t) * t_step, len(u)) * u_step
    result = optimize.linprog(width, A_ub=matrix, b_ub=np.array(bound), bounds=(0, 1))
    if result.status != 0:
        raise RuntimeError(f"the programme for {c.name} did not solve: {result.message}")
    return float(result.fun) / UNIT


def rule_width(d: slope_rule.RuleDesign) -> float:
    """The rule's mean width at γ = 0 (known σ, with its allowance), in the same unit."""
    allowance = slope_rule.sigma_allowance(d, LEVEL, slope_rule.EXACT_DOF)
    return slope_rule.rule(d, LEVEL).quiet_width() * allowance / UNIT


def measure(cells: list[tuple[int, int]], fine: tuple[int, int]) -> dict:
    started, rows = time.process_time(), []
    for scales, factor in cells:
        d = design(scales, factor)
        row = {"scales": scales, "factor": factor, "kappa": d.kappa, "rho": d.rho}
        row["rule"] = rule_width(d)
        row["growing"] = continuation("growing", scales, factor)
        row["least"] = {c.name: least_width(d, c) for c in constraint_sets(scales, factor)}
        print(row, flush=True)
        rows.append(row)
    record: dict = {"level": LEVEL, "rows": rows}
    d, c = design(*fine), constraint_sets(*fine)[0]
    record["grid_check"] = {
        "cell": list(fine),
        "steps 0.2 / 0.1": least_width(d, c),
        "steps 0.1 / 0.05": least_width(d, c, t_step=0.1, u_step=0.05),
    }
    record["cpu_seconds"] = round(time.process_time() - started)
    return record


def measured(shapes: dict, scales: int, factor: int, mode: str) -> float:
    """The mean 80% width of the quiet arms over the seed-noise-only width that the coverage
    benchmark measured at σ/E 0.3 in this mode (σ estimated; the mean over seeds)."""
    cells = [
        c for c in shapes["cells"]
        if (c["scales"], c["factor"], c["noise"]) == (scales, factor, SHARP_NOISE)
    ]  # fmt: skip
    ratios = [
        c["shapes"][mode][name]["width"] / c["seed_only_width"] for c in cells for name in QUIET
    ]
    return float(np.mean(ratios))


def table(record: dict, shapes: dict) -> str:
    lines = [
        "The least mean 80% width of a quiet arm (no drift) over its seed-noise-only width "
        "(2·z·σ_A, σ known), of any procedure, randomised ones included, that holds the "
        "constraints named, beside the slope rule's (`benchmarks/predict_rule_optimum.py`, "
        f"{record['cpu_seconds']} s of CPU):",
        "",
        "| scales | target | κ | ρ | growing's λ | measured, with / alone | the rule, σ known | "
        + " | ".join(f"least: {n}" for n in NAMES)
        + " |",
        "|---|---|---|---|---|---|---|" + "---|" * len(NAMES),
    ]
    for row in record["rows"]:
        least = " | ".join(f"{row['least'][n]:.2f}" for n in NAMES)
        scales, factor = row["scales"], row["factor"]
        seen = " / ".join(f"{measured(shapes, scales, factor, m):.2f}" for m in ("with", "alone"))
        lines.append(
            f"| {scales} | {factor}× | {row['kappa']:.2f} | {row['rho']:.2f} | "
            f"{row['growing']:.2f} | {seen} | {row['rule']:.2f} | {least} |"
        )
    check = record["grid_check"]
    scales, factor = check["cell"]
    lines += [
        "",
        f"The grid: at {scales} scales, {factor}×, the rule's constraints, steps of t / u "
        f"0.2 / 0.1 give {check['steps 0.2 / 0.1']:.3f}, 0.1 / 0.05 give "
        f"{check['steps 0.1 / 0.05']:.3f}.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-doc", action="store_true", help="print, do not write the record")
    parser.add_argument(
        "--table",
        action="store_true",
        help="no programme: the doc's block from the stored record and SHAPES (after a new one)",
    )
    args = parser.parse_args()
    if args.table:
        record = json.loads(RECORD.read_text())
    else:
        cells = [(scales, factor) for scales in (4, 5) for factor in (4, 16)]
        record = measure(cells, fine=(4, 16))
    text = table(record, json.loads(SHAPES.read_text()))
    print(text)
    if not (args.no_doc or args.table):
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
    if not args.no_doc:
        replace_block(DOC, BEGIN, END, text)


if __name__ == "__main__":
    main()
