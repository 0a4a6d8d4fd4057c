"""Issue 31: the calibrated rule over a grid of default designs, its profile at work, its power
against the previous rule on the same draws, and what a new design costs.

Every cell is the whole procedure (each simulated audit judged at its own calibrated level α′,
its single-seed bound and profile estimated from its own seeds), simulated under every model
of the noise panel on draws the calibration never saw (seed 0; the levels come from seed 1).

    PYTHONPATH=src nice -n 10 python benchmarks/design_grid.py [--audits 500] [--full]

The default grid is every arm count × seeds 1–6 at baseline 3, and baselines 2, 5 and 10 at 2
and 3 seeds; `--full` crosses every baseline with every seed count (4× the time). The loop
(`run --until-settled`, 1–20 arms × ≤ 3–6 seeds) and the two-metric fixed designs always run
at >= 4,000 audits per model.

Prints markdown tables (pasted into docs/verdicts.md) and writes benchmarks/design_grid.json.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from archaudit.names import BASELINE
from archaudit.stats import AuditDesign, JudgeOptions, judge
from archaudit.stats.records.noise_panel import (
    BEYOND_PANEL,
    CALIBRATION_PANEL,
    PANEL,
    NoiseModel,
    parse_one,
)
from archaudit.stats.records.table import Row, Table
from archaudit.stats.records.verdicts import SIGNIFICANT
from archaudit.stats.simulation.calibrate import audit_levels, design_level
from archaudit.stats.simulation.design_rate import arm_mde, design_rate
from archaudit.stats.simulation.null_kernel import arm_sigmas, family_outcomes, simulate_outcomes
from archaudit.stats.simulation.profile import Profile
from archaudit.stats.simulation.sequential import (
    SequentialRule,
    loop_level,
    sequential_design_rate,
    sequential_null_fwer,
    simulate_sequential,
)
from archaudit.stats.simulation.simulate import binomial_se, judged, null_rates

ARMS = (1, 2, 3, 5, 10, 19)
SEEDS = (1, 2, 3, 4, 5, 6)
BASELINES = (2, 3, 5, 10)
MIXED = (1,) * 10 + (2,) * 5 + (3,) * 4
ALPHA = 0.05
LOOP_ARMS = (1, 2, 3, 5, 20)
LOOP_SEEDS = (3, 4, 5, 6)
TWO_METRIC = {
    "1 × 2, baseline 3": (2,),
    "2 × 2, baseline 3": (2, 2),
    "3 × 2, baseline 3": (2, 2, 2),
    "19 × 2, baseline 3": (2,) * 19,
    "19 × 3, baseline 3": (3,) * 19,
}


def panel(design: AuditDesign, audits: int) -> dict:
    """The whole procedure's rates under every model of the panel and beyond it
    (`CALIBRATION_PANEL`): worst FWER, worst false-candidate rate, and the MC s.e. of the
    worst."""
    rates = {name: null_rates(design, audits, 0, parse_one(name)) for name in CALIBRATION_PANEL}
    name = max(rates, key=lambda k: rates[k][0])
    worst = rates[name][0]
    se = binomial_se(max(worst, 1.0 / audits), audits)
    return {
        "level": design_level(design),
        "normal": rates["normal"][0],
        "worst": worst,
        "worst_model": name,
        "se": se,
        "ok": worst <= ALPHA + 2 * se,
        "candidates": max(r[1] for r in rates.values()),
    }


def cell(result: dict) -> str:
    flag = "" if result["ok"] else " **ABOVE**"
    level = "" if result["level"] >= ALPHA else f" (α′ {result['level']:.3f})"
    return f"{result['worst']:.3f}{level}{flag}"


def grid(audits: int, correction: str, arms: tuple, seeds: tuple, bases: tuple) -> dict:
    rows = {}
    for m in arms:
        for n0 in bases:
            rows[f"{m} arm{'s' * (m > 1)}, baseline {n0}"] = {
                k: panel(AuditDesign((k,) * m, n0, correction=correction), audits) for k in seeds
            }
    return rows


def print_grid(title: str, rows: dict, seeds: tuple) -> None:
    print(f"\n{title}\n")
    print("| design | " + " | ".join(f"{k} seed{'s' * (k > 1)}" for k in seeds) + " |")
    print("|---|" + "---|" * len(seeds))
    for name, cells in rows.items():
        print(
            f"| {name} | " + " | ".join(cell(cells[k]) if k in cells else "" for k in seeds) + " |"
        )


def extras(audits: int) -> dict:
    """2×2 with baseline 3–5, the mixed design and Dunnett."""
    fixed = {
        **{f"2 × 2, baseline {b}": AuditDesign((2, 2), b) for b in (3, 4, 5)},
        "10 × 1 + 5 × 2 + 4 × 3, baseline 3": AuditDesign(MIXED, 3),
        "2 × 2, baseline 3, Dunnett": AuditDesign((2, 2), 3, correction="dunnett"),
        "19 × 3, baseline 3, Dunnett": AuditDesign((3,) * 19, 3, correction="dunnett"),
    }
    out = {name: panel(design, audits) for name, design in fixed.items()}
    return out


def loop_cell(arms: int, top: int, audits: int, alpha: float = ALPHA) -> dict:
    """The calibrated loop (`run --until-settled`) of `arms` arms ≤ `top` seeds, baseline 3:
    its level (from seed 1's draws, cold: a fresh cache, CPU timed) and its null rate under
    every panel model on fresh draws (seed 0)."""
    rule = SequentialRule(alpha=alpha, max_seeds=top, calibrated=True)
    saved = os.environ.get("ARCHAUDIT_CACHE")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["ARCHAUDIT_CACHE"] = folder
        cpu = time.process_time()
        level = loop_level(arms, rule)
        cold = time.process_time() - cpu
    if saved is not None:
        os.environ["ARCHAUDIT_CACHE"] = saved
    rates = {n: sequential_null_fwer(arms, rule, audits, 0, parse_one(n)) for n in PANEL}
    name = max(rates, key=lambda k: rates[k])
    se = binomial_se(max(rates[name], 1.0 / audits), audits)
    return {
        "level": level,
        "cold_cpu_s": cold,
        "normal": rates["normal"],
        "worst": rates[name],
        "worst_model": name,
        "se": se,
        "audits": audits,
        "ok": rates[name] <= alpha + 2 * se,
    }


LOOP_PROFILES = ((1, 3), (2, 3), (1, 5))
WIDE_MODELS = ("hetero:20:1", "hetero:50:1")


def loop_profiles(audits: int) -> dict:
    """The calibrated loop, each audit at its own levels (the panel's, lowered by the profile its
    seeds show at each look), under one arm far wider than the panel's widest: its null rate on
    fresh draws (seed 0) and the profile levels it can reach."""
    out = {}
    for arms, top in LOOP_PROFILES:
        rule = SequentialRule(max_seeds=top, calibrated=True)
        rates = {m: sequential_null_fwer(arms, rule, audits, 0, parse_one(m)) for m in WIDE_MODELS}
        out[f"{arms}×{top}"] = {
            "level": loop_level(arms, rule),
            "profile_levels": {
                p.spec: loop_level(arms, rule, p) for p in (Profile(12, 1), Profile(24, 1))
            },
            "rates": rates,
            "se": {m: binomial_se(max(r, 1.0 / audits), audits) for m, r in rates.items()},
            "audits": audits,
        }
        print(f"loop {arms}×{top}: {out[f'{arms}×{top}']}", flush=True)
    return out


def loops(audits: int) -> dict:
    return {f"{m}×{top}": loop_cell(m, top, audits) for m in LOOP_ARMS for top in LOOP_SEEDS}


def two_metric_cell(arm_seeds: tuple, audits: int) -> dict:
    """Two primary metrics judged as `run` and the report judge them: each family at α/2 (its
    own α′), independent draws per metric (seeds 0 and 2); the rate that either metric declares
    a null arm, worst over the panel. By the union bound it is ≤ the sum of the two families'
    rates whatever the metrics' correlation."""
    design = AuditDesign(arm_seeds, 3, alpha=ALPHA / 2)
    rates = {}
    for name in PANEL:
        model = parse_one(name)
        either = np.zeros(audits, dtype=bool)
        for seed in (0, 2):
            outcomes, level = judged(design, audits, seed, model)
            either |= outcomes.declared(level).any(axis=1)
        rates[name] = float(np.mean(either))
    worst = max(rates, key=lambda k: rates[k])
    se = binomial_se(max(rates[worst], 1.0 / audits), audits)
    return {
        "level": design_level(design),
        "normal": rates["normal"],
        "worst": rates[worst],
        "worst_model": worst,
        "se": se,
        "audits": audits,
        "ok": rates[worst] <= ALPHA + 2 * se,
    }


def two_metrics(audits: int) -> dict:
    return {name: two_metric_cell(seeds, audits) for name, seeds in TWO_METRIC.items()}


def print_loops(rows: dict) -> None:
    print("\n| loop (arms × max seeds), baseline 3 | level | normal | panel's worst | cold CPU |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['level']:.4f} | {r['normal']:.3f} | {r['worst']:.3f} ± {r['se']:.3f} "
            f"({r['worst_model']}, {r['audits']:,}){'' if r['ok'] else ' **ABOVE**'} | "
            f"{r['cold_cpu_s']:.1f} s |"
        )


def print_two_metrics(rows: dict) -> None:
    print("\n| two primary metrics, α/2 each | α′ per metric | normal | panel's worst (either) |")
    print("|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['level']:.4f} | {r['normal']:.3f} | {r['worst']:.3f} ± {r['se']:.3f} "
            f"({r['worst_model']}, {r['audits']:,}){'' if r['ok'] else ' **ABOVE**'} |"
        )


MDE_FIXED = {
    "2 × 2, baseline 3": (2, 2),
    "3 × 2, baseline 3": (2, 2, 2),
    "19 × 2, baseline 3": (2,) * 19,
    "19 × 3, baseline 3": (3,) * 19,
}
MDE_LOOPS = {"loop ≤ 3, 20 arms": (20, 3), "loop ≤ 6, 20 arms": (20, 6), "loop ≤ 3, 2 arms": (2, 3)}


def printed_mdes(audits: int, loops: bool = True) -> dict:
    """The MDE each design prints (fixed: the power formula at α′, as `stats` and `stats power`;
    the loop: its design rate's bisection) and the power simulated at exactly that effect on
    fresh draws (seed 3): one planted arm, the others null, normal noise."""
    out = {}
    for name, seeds in MDE_FIXED.items():
        design = AuditDesign(seeds, 3)
        mde = arm_mde(design, seeds[0])
        outcomes = simulate_outcomes(design, audits, 3, parse_one("normal"), mde, 1)
        found = outcomes.declared(audit_levels(design, outcomes.bounds))[:, 0]
        out[name] = {"mde": mde, "power": float(np.mean(found & (outcomes.delta[:, 0] > 0)))}
    for name, (arms, top) in MDE_LOOPS.items() if loops else ():
        rule = SequentialRule(max_seeds=top, calibrated=True)
        mde = sequential_design_rate(arms, rule).mde_sigmas
        run = simulate_sequential(arms=arms, rule=rule, audits=audits, effects=(mde,), seed=3)
        out[name] = {"mde": mde, "power": run.power_planted}
    for r in out.values():
        r["se"] = binomial_se(r["power"], audits)
    return out


def print_mdes(rows: dict) -> None:
    print("\n| design | printed MDE | power simulated there |\n|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['mde']:.2f} σ | {r['power']:.3f} ± {r['se']:.3f} |")


def profile_cases(audits: int) -> dict:
    """Null audits whose multi-seed arms are far wider than the panel's widest (6×)."""
    cases = {
        "19 × 2, baseline 3, five arms at 10×": (AuditDesign((2,) * 19, 3), "hetero:10:5"),
        "19 × 3, baseline 3, three arms at 20×": (AuditDesign((3,) * 19, 3), "hetero:20:3"),
        "2 × 2, baseline 3, both arms at 20×": (AuditDesign((2, 2), 3), "hetero:20:2"),
        "3 × 1 + 2 × 3, baseline 3, all five at 20×": (
            AuditDesign((1, 1, 1, 3, 3), 3),
            "hetero:20:5",
        ),
    }
    out = {}
    for name, (design, noise) in cases.items():
        model = parse_one(noise)
        outcomes = simulate_outcomes(design, audits, 0, model)
        levels = audit_levels(design, outcomes.bounds)
        new = float(np.mean(outcomes.declared(levels).any(axis=1)))
        old = float(np.mean(outcomes.declared(ALPHA).any(axis=1)))
        out[name] = {
            "noise": noise,
            "rate": new,
            "se": binomial_se(max(new, 1 / audits), audits),
            "at_alpha": old,
            "median_level": float(np.median(levels)),
            "median_bound": float(np.median(outcomes.bound)),
        }
    return out


def simulated_mde(design: AuditDesign, calibrated: bool, audits: int) -> float:
    """The planted effect (σ) one arm is declared with 80% power, by bisection on common draws:
    the calibrated procedure, or the previous rule (level α, the same tests)."""
    low, high = 0.0, 128.0
    for _ in range(11):
        mid = (low + high) / 2
        outcomes = simulate_outcomes(design, audits, 0, parse_one("normal"), mid, 1)
        level = audit_levels(design, outcomes.bounds) if calibrated else ALPHA
        found = np.mean(outcomes.declared(level)[:, 0] & (outcomes.delta[:, 0] > 0))
        low, high = (low, mid) if found >= 0.8 else (mid, high)
    return high


def power(audits: int) -> dict:
    designs = {
        "19 × 3, baseline 3": AuditDesign((3,) * 19, 3),
        "19 × 5, baseline 5": AuditDesign((5,) * 19, 5),
        "19 × 2, baseline 3": AuditDesign((2,) * 19, 3),
        "2 × 2, baseline 3": AuditDesign((2, 2), 3),
    }
    out = {}
    for name, design in designs.items():
        out[name] = {
            "previous": simulated_mde(design, False, audits),
            "calibrated": simulated_mde(design, True, audits),
            "formula": arm_mde(design, design.arm_seeds[0]),
        }
    return out


def cost() -> dict:
    """Wall and CPU seconds of a design never seen before (a fresh cache): 20 arms × 3 seeds,
    and 20 arms × 2 seeds (whose audits show the most distinct profiles)."""
    saved = os.environ.get("ARCHAUDIT_CACHE")
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        os.environ["ARCHAUDIT_CACHE"] = folder
        for seeds in (3, 2):
            wall, cpu = time.perf_counter(), time.process_time()
            design_rate(AuditDesign((seeds,) * 20, 3))
            out[f"20x{seeds}"] = {
                "wall_s": time.perf_counter() - wall,
                "cpu_s": time.process_time() - cpu,
            }
    if saved is not None:
        os.environ["ARCHAUDIT_CACHE"] = saved
    return out


BEYOND_FIXED = {
    "2 × 2, baseline 3": (2, 2),
    "3 × 2, baseline 3": (2, 2, 2),
    "19 × 2, baseline 3": (2,) * 19,
    "19 × 3, baseline 3": (3,) * 19,
    "19 × 5, baseline 3": (5,) * 19,
    "10 × 1 + 5 × 2 + 4 × 3, baseline 3": MIXED,
}
BEYOND_LOOPS = ((1, 3), (2, 3), (3, 3), (5, 3), (20, 3), (2, 6), (20, 6))
CROSS_CHECK_MODELS = ("profile:20:1", "base:6")


def rate_cell(rate: float, audits: int) -> dict:
    se = binomial_se(max(rate, 1.0 / audits), audits)
    return {"rate": rate, "se": se, "ok": rate <= ALPHA + 2 * se}


def beyond_fixed(audits: int) -> dict:
    """Issue 53: each fixed design under every model of the panel and beyond it (one multi-seed
    arm 10×, 20×, 50× wide; the baseline alone 3×, 6×, 10× wide), the whole calibrated
    procedure on draws the calibration never saw (seed 0), and the verdicts of `judge` (what
    `archaudit stats` prints) on a sample of the same kind of null tables (`judge_agreement`)."""
    out = {}
    for name, seeds in BEYOND_FIXED.items():
        design = AuditDesign(seeds, 3)
        rates = {}
        for model in (*PANEL, *BEYOND_PANEL):
            outcomes, level = judged(design, audits, 0, parse_one(model))
            rates[model] = rate_cell(float(np.mean(outcomes.declared(level).any(axis=1))), audits)
        out[name] = {"level": design_level(design), "audits": audits, "rates": rates}
        print(f"beyond {name}: {json.dumps(out[name]['rates'])}", flush=True)
    return out


def null_tables(design: AuditDesign, model: NoiseModel, audits: int, seed: int) -> tuple:
    """`audits` null tables of `design` under `model` (baseline, then arms a00, a01, ... in the
    design's order), and the kernel's declared (audits, m) on the same values."""
    rng = np.random.default_rng(seed)
    base = model.draw_baseline(rng, (audits, design.baseline_seeds))
    sigmas = arm_sigmas(design, model, 0)
    arms = [model.draw(rng, (audits, n)) * sigmas[i] for i, n in enumerate(design.arm_seeds)]
    order = sorted(range(design.m), key=lambda i: design.arm_seeds[i])
    assert order == list(range(design.m)), "arms must be listed by ascending seed count"
    groups = [
        np.stack([arms[i] for i in range(design.m) if design.arm_seeds[i] == n], axis=1)
        for n in sorted(set(design.arm_seeds))
    ]
    outcomes = family_outcomes(design, base, [], groups)
    declared = outcomes.declared(audit_levels(design, outcomes.bounds))
    tables = []
    for b in range(audits):
        values = {BASELINE: base[b], **{f"a{i:02d}": arms[i][b] for i in range(design.m)}}
        rows = [
            Row(arm=arm, scale="s", seed=k, metric="acc", value=float(v), line=0)
            for arm, vs in values.items()
            for k, v in enumerate(vs)
        ]
        tables.append(Table(tuple(rows)))
    return tables, declared


def judge_agreement(audits: int) -> dict:
    """How often `judge` (the verdicts `archaudit stats` prints) and the simulation kernel
    disagree on which null arms are declared, over `audits` tables per design and model."""
    out = {}
    for name, seeds in BEYOND_FIXED.items():
        design = AuditDesign(seeds, 3)
        for model in CROSS_CHECK_MODELS:
            tables, declared = null_tables(design, parse_one(model), audits, 7)
            mismatches, judged_declaring = 0, 0
            for table, kernel in zip(tables, declared, strict=True):
                verdicts = {a.arm: a.verdict for a in judge(table, "acc", JudgeOptions()).arms}
                said = np.array([verdicts[f"a{i:02d}"] in SIGNIFICANT for i in range(design.m)])
                mismatches += int(not np.array_equal(said, kernel))
                judged_declaring += int(said.any())
            out[f"{name} / {model}"] = {
                "tables": audits,
                "mismatches": mismatches,
                "declaring": judged_declaring,
            }
    print(f"judge against the kernel: {json.dumps(out)}", flush=True)
    return out


def beyond_two_metrics(audits: int) -> dict:
    """Two primary metrics (each at α/2, its own α′), the same wide arm or wide baseline on
    both: the rate that either declares a null arm."""
    out = {}
    for name, arm_seeds in TWO_METRIC.items():
        design = AuditDesign(arm_seeds, 3, alpha=ALPHA / 2)
        rates = {}
        for model in (*PANEL, *BEYOND_PANEL):
            either = np.zeros(audits, dtype=bool)
            for seed in (0, 2):
                outcomes, level = judged(design, audits, seed, parse_one(model))
                either |= outcomes.declared(level).any(axis=1)
            rates[model] = rate_cell(float(np.mean(either)), audits)
        out[name] = {"level": design_level(design), "audits": audits, "rates": rates}
        print(f"beyond two metrics {name}: {json.dumps(out[name]['rates'])}", flush=True)
    return out


def beyond_loops(audits: int) -> dict:
    """The calibrated loop (`run --until-settled`, baseline 3) beyond the panel (its rates over
    the panel are the `loop` section's: the loop's test and level did not change in issue 53)."""
    out = {}
    for arms, top in BEYOND_LOOPS:
        rule = SequentialRule(alpha=ALPHA, max_seeds=top, calibrated=True)
        rates = {
            m: rate_cell(sequential_null_fwer(arms, rule, audits, 0, parse_one(m)), audits)
            for m in BEYOND_PANEL
        }
        out[f"{arms}×{top}"] = {"level": loop_level(arms, rule), "audits": audits, "rates": rates}
        print(f"beyond loop {arms}×{top}: {json.dumps(rates)}", flush=True)
    return out


def print_beyond(title: str, rows: dict) -> None:
    """One table: α′, the panel's worst and every model beyond it; **ABOVE** past α + 2 s.e."""
    print(f"\n{title}\n")
    print("| design | α′ | panel's worst | " + " | ".join(BEYOND_PANEL) + " |")
    print("|---|---|---|" + "---|" * len(BEYOND_PANEL))
    for name, r in rows.items():
        rates = r["rates"]
        shown = [m for m in PANEL if m in rates]
        worst = max(shown, key=lambda m: rates[m]["rate"]) if shown else ""
        cells = [_rate_text(rates[worst]) + f" ({worst})" if worst else "(`loop` section)"]
        cells += [_rate_text(rates[m]) for m in BEYOND_PANEL]
        level = r.get("level", ALPHA)
        print(f"| {name} | {level:.2g} | " + " | ".join(cells) + " |")
    audits = next(iter(rows.values()))["audits"] if rows else 0
    print(f"\n{audits:,} null audits per model and cell; ± one MC s.e.")


def _rate_text(cell: dict) -> str:
    return f"{cell['rate']:.3f} ± {cell['se']:.3f}" + ("" if cell["ok"] else " **ABOVE**")


def print_agreement(rows: dict) -> None:
    print("\n| design / model | null tables judged | mismatches | tables declaring |")
    print("|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['tables']} | {r['mismatches']} | {r['declaring']} |")


SECTIONS = ("cost", "holm", "dunnett", "extras", "loop", "two-metric", "mde", "profile", "power")
"""The default sections; `small` (1–3 and 19 arms against 3 at >= 4,000 audits per model) and
`loop-profile` (the loop under an arm 20× and 50× wide) and `beyond` (issue 53: the fixed
designs, two primary metrics and the loop beyond the panel, >= 8,000 audits per model in the
committed record, and `judge` against the kernel on the same kind of tables) run only when
named."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--audits", type=int, default=500, help="audits per panel model")
    parser.add_argument("--full", action="store_true", help="every baseline × every seed count")
    parser.add_argument("--sections", default=",".join(SECTIONS), help="which parts to run")
    args = parser.parse_args()
    sections = args.sections.split(",")
    started = time.process_time()
    result: dict = {}
    if "cost" in sections:
        result["cost"] = cost()
        print(f"a new design of 20 arms: {result['cost']}")
    if "holm" in sections:
        result["holm"] = grid(args.audits, "holm", ARMS, SEEDS, (3,))
        others = BASELINES if args.full else (2, 5, 10)
        result["holm"] |= grid(args.audits, "holm", ARMS, SEEDS if args.full else (2, 3), others)
        print_grid("Holm (worst panel rate; α′ where below α)", result["holm"], SEEDS)
    if "small" in sections:
        audits = max(args.audits, 4000)
        result["small"] = grid(audits, "holm", (1, 2, 3), SEEDS, (3,))
        result["small"] |= grid(audits, "holm", (19,), (2, 3, 5), (3,))
        title = f"Small and 19-arm families, {audits:,} audits per model"
        print_grid(title, result["small"], SEEDS)
    if "dunnett" in sections:
        result["dunnett"] = grid(args.audits, "dunnett", (2, 5, 19), (2, 3, 5), (3,))
        print_grid("Dunnett", result["dunnett"], (2, 3, 5))
    if "extras" in sections:
        print_extras(result.setdefault("extras", extras(args.audits)))
    if "loop" in sections:
        print_loops(result.setdefault("loop", loops(max(args.audits, 8000))))
    if "loop-profile" in sections:
        result["loop-profile"] = loop_profiles(max(args.audits, 8000))
    if "two-metric" in sections:
        print_two_metrics(result.setdefault("two-metric", two_metrics(max(args.audits, 4000))))
    if "mde" in sections:
        print_mdes(result.setdefault("mde", printed_mdes(max(args.audits, 4000))))
    if "mde-fixed" in sections:  # the fixed designs only (the loop's test did not change)
        print_mdes(result.setdefault("mde", printed_mdes(max(args.audits, 4000), loops=False)))
    if "profile" in sections:
        print_profile(result.setdefault("profile", profile_cases(4 * args.audits)))
    if "power" in sections:
        print_power(result.setdefault("power", power(2 * args.audits)))
    if "beyond" in sections:
        beyond(result, args.audits)
    result["cpu_s"] = time.process_time() - started
    se = binomial_se(ALPHA, args.audits)
    print(f"\nCPU {result['cpu_s']:.0f} s; MC s.e. per cell ≈ {se:.4f} at α")
    out = Path(__file__).with_name(f"design_grid-{'-'.join(sections)}.json")
    out.write_text(json.dumps(result, indent=1, default=float))


def beyond(result: dict, audits: int) -> None:
    """The `beyond` section: fixed designs, two primary metrics, the loop, `judge` agreement."""
    result["beyond"] = beyond_fixed(audits)
    print_beyond("Fixed designs, the panel and beyond it (Holm, α = 0.05)", result["beyond"])
    result["beyond-two-metric"] = beyond_two_metrics(audits)
    title = "Two primary metrics at α/2 each, the same model on both (either metric declares)"
    print_beyond(title, result["beyond-two-metric"])
    result["beyond-loop"] = beyond_loops(audits)
    print_beyond("The loop (`run --until-settled`), baseline 3", result["beyond-loop"])
    result["judge-agreement"] = judge_agreement(50)
    print_agreement(result["judge-agreement"])


def print_extras(rows: dict) -> None:
    print("\n| design | α′ | normal | panel's worst | false candidates (worst) |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['level']:.3f} | {r['normal']:.3f} | {r['worst']:.3f} ± {r['se']:.3f} "
            f"({r['worst_model']}){'' if r['ok'] else ' **ABOVE**'} | {r['candidates']:.3f} |"
        )


def print_profile(rows: dict) -> None:
    print("\n| case | rate, calibrated | at α (previous) | median α′ | median single-seed bound |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} ({r['noise']}) | {r['rate']:.3f} ± {r['se']:.3f} | {r['at_alpha']:.3f} | "
            f"{r['median_level']:.3f} | {r['median_bound']:.1f} |"
        )


def print_power(rows: dict) -> None:
    print("\n| design | MDE previous rule | MDE calibrated | formula |\n|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['previous']:.2f} σ | {r['calibrated']:.2f} σ | {r['formula']:.2f} σ |"
        )


if __name__ == "__main__":
    main()
