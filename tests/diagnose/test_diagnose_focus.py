"""Sink mass vs retrieval across arms: Spearman ρ with a bootstrap interval over arms, QK-norm
arms against the baseline, and the runs read from an audit directory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from archaudit.diagnose.focus import RunFocus, collect_runs, focus_across_arms
from archaudit.errors import DataError
from archaudit.stats import spearman, welch_test

SINKS = {"baseline": 0.60, "qk_norm": 0.30, "geglu": 0.55, "alibi": 0.70, "nope": 0.20}
RETRIEVAL = {"baseline": 0.50, "qk_norm": 0.35, "geglu": 0.45, "alibi": 0.60, "nope": 0.30}


def _runs(seeds: int = 3) -> list[RunFocus]:
    return [
        RunFocus(
            arm, seed, SINKS[arm] + 0.01 * seed, RETRIEVAL[arm] - 0.01 * seed, arm == "qk_norm"
        )
        for arm in SINKS
        for seed in range(seeds)
    ]


def test_monotone_arms_give_rho_one_and_the_qk_norm_contrast() -> None:
    result = focus_across_arms(_runs(), metric="needle", n_boot=500)
    assert result.spearman == pytest.approx(1.0)
    low, high = result.spearman_interval
    assert low <= 1.0 <= high + 1e-12
    [contrast] = result.qk_norm_vs_baseline
    assert contrast.arm == "qk_norm"
    assert contrast.difference == pytest.approx(SINKS["qk_norm"] - SINKS["baseline"])
    a = np.array([SINKS["qk_norm"] + 0.01 * s for s in range(3)])
    b = np.array([SINKS["baseline"] + 0.01 * s for s in range(3)])
    assert contrast.p_value == pytest.approx(welch_test(a, b).p)


def test_interval_is_wide_when_the_relation_is_noise() -> None:
    rng = np.random.default_rng(0)
    runs = [
        RunFocus(f"arm{i}", 0, float(rng.random()), float(rng.random()), False) for i in range(8)
    ]
    result = focus_across_arms(runs, n_boot=1000, seed=1)
    sinks = np.array([r.sink_mass for r in runs])
    retrieval = np.array([r.retrieval for r in runs])
    assert result.spearman == pytest.approx(spearman(sinks, retrieval))
    low, high = result.spearman_interval
    assert low < result.spearman < high and high - low > 0.5
    assert result.qk_norm_vs_baseline == []


def test_needs_three_arms() -> None:
    with pytest.raises(DataError, match=">= 3 arms"):
        focus_across_arms([r for r in _runs() if r.arm in ("baseline", "nope")])


def test_collect_runs_from_an_audit_directory(tmp_path: Path) -> None:
    lines = ["arm,scale,seed,metric,value"]
    for run in _runs(seeds=2):
        folder = tmp_path / run.arm / "d6" / f"seed-{run.seed}"
        (folder / "diagnostics").mkdir(parents=True)
        spec = {
            "arm": run.arm,
            "scale": "d6",
            "seed": run.seed,
            "model": {"attention": {"qk_norm": run.qk_norm}},
        }
        (folder / "run.json").write_text(json.dumps(spec))
        (folder / "diagnostics" / "attention.json").write_text(
            json.dumps({"sink_mass_mean": run.sink_mass})
        )
        lines.append(f"{run.arm},d6,{run.seed},needle,{run.retrieval}")
        lines.append(f"{run.arm},d6,{run.seed},val_loss,3.0")
    (tmp_path / "results.csv").write_text("\n".join(lines) + "\n")
    runs = collect_runs(tmp_path, "needle")
    assert sorted(runs, key=lambda r: (r.arm, r.seed)) == sorted(
        _runs(seeds=2), key=lambda r: (r.arm, r.seed)
    )
    with pytest.raises(DataError, match="no metric 'neele'"):
        collect_runs(tmp_path, "neele")
