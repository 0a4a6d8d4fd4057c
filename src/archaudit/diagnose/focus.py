"""Attention focus across an audit's arms (OlmPool, Ai2 2026): does first-token sink mass go with
long-context retrieval, and does QK-norm weaken it?

Works on plain numbers per run — (arm, seed, sink mass, retrieval accuracy, QK-norm or not) —
so it needs no model; `collect_runs` reads them from an audit directory (run.json of each run,
the run's `diagnostics/attention.json`) and its results table (the command passes the one the
audit's DONE records give; by default the audit's results.csv export).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from archaudit.errors import DataError
from archaudit.names import BASELINE
from archaudit.stats import Table, load_table, spearman, welch_test
from archaudit.stats.inference.resample import percentile_interval
from archaudit.stats.records.serialize import JsonResult


@dataclass(frozen=True)
class RunFocus:
    arm: str
    seed: int
    sink_mass: float
    retrieval: float
    qk_norm: bool


@dataclass(frozen=True)
class ArmFocus(JsonResult):
    arm: str
    qk_norm: bool
    seeds: int
    sink_mass: float
    retrieval: float


@dataclass(frozen=True)
class QKNormContrast(JsonResult):
    arm: str
    difference: float
    """Mean sink mass of the arm minus the baseline's."""
    p_value: float | None
    """Welch's t-test over seeds; None with fewer than two seeds a side."""


@dataclass(frozen=True)
class FocusResult(JsonResult):
    metric: str
    baseline: str
    arms: list[ArmFocus]
    spearman: float
    """ρ between the arms' mean first-token sink mass and mean retrieval accuracy."""
    spearman_interval: tuple[float, float]
    """Percentile bootstrap over arms."""
    n_boot: int
    qk_norm_vs_baseline: list[QKNormContrast]


def focus_across_arms(
    runs: Sequence[RunFocus],
    *,
    metric: str = "needle",
    baseline: str = BASELINE,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> FocusResult:
    by_arm: dict[str, list[RunFocus]] = {}
    for run in sorted(runs, key=lambda r: (r.arm, r.seed)):
        by_arm.setdefault(run.arm, []).append(run)
    if len(by_arm) < 3:
        raise DataError(f"a rank correlation across arms needs >= 3 arms, got {len(by_arm)}")
    arms = [
        ArmFocus(
            arm,
            any(r.qk_norm for r in rs),
            len(rs),
            float(np.mean([r.sink_mass for r in rs])),
            float(np.mean([r.retrieval for r in rs])),
        )
        for arm, rs in by_arm.items()
    ]
    sink = np.array([a.sink_mass for a in arms])
    retrieval = np.array([a.retrieval for a in arms])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(arms), size=(n_boot, len(arms)))
    replicates = np.array([spearman(sink[d], retrieval[d]) for d in draws])
    contrasts = []
    if baseline in by_arm:
        base = np.array([r.sink_mass for r in by_arm[baseline]])
        for arm in arms:
            if not arm.qk_norm or arm.arm == baseline:
                continue
            values = np.array([r.sink_mass for r in by_arm[arm.arm]])
            p = None
            if len(values) >= 2 and len(base) >= 2 and (values.std() > 0 or base.std() > 0):
                p = welch_test(values, base).p
            contrasts.append(QKNormContrast(arm.arm, float(values.mean() - base.mean()), p))
    return FocusResult(
        metric=metric,
        baseline=baseline,
        arms=arms,
        spearman=spearman(sink, retrieval),
        spearman_interval=percentile_interval(replicates, confidence),
        n_boot=n_boot,
        qk_norm_vs_baseline=contrasts,
    )


def collect_runs(
    audit_dir: Path, metric: str, scale: str | None = None, results: Table | None = None
) -> list[RunFocus]:
    """(arm, seed, sink mass, retrieval, QK-norm) for every run of an audit at one scale that
    has a `diagnostics/attention.json` and a value of `metric` in `results` (default: the
    audit's results.csv)."""
    table = results if results is not None else load_table(audit_dir)
    if metric not in table.metrics:
        raise DataError(
            f"{table.source} has no metric {metric!r} (it has {', '.join(table.metrics)})"
        )
    scale = table.resolve_scale(scale)
    values = {
        (r.arm, r.seed): r.value for r in table.rows if r.metric == metric and r.scale == scale
    }
    runs = []
    for spec_file in sorted(audit_dir.glob("*/*/*/run.json")):
        if spec_file.parts[-4].startswith(("_", ".")):
            continue
        spec = json.loads(spec_file.read_text())
        attention = spec_file.parent / "diagnostics" / "attention.json"
        key = (spec["arm"], int(spec["seed"]))
        if (
            spec["scale"] != scale
            or not attention.is_file()
            or key not in values
            or math.isnan(values[key])
        ):
            continue
        options = spec.get("model", {}).get("attention", {})
        runs.append(
            RunFocus(
                arm=spec["arm"],
                seed=int(spec["seed"]),
                sink_mass=float(json.loads(attention.read_text())["sink_mass_mean"]),
                retrieval=values[key],
                qk_norm=bool(options.get("qk_norm") or options.get("qkv_norm")),
            )
        )
    return runs
