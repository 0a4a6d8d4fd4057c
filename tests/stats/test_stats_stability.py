"""LR sensitivity, the largest stable rate, the stability verdict and its calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from archaudit.stats.analyses.stability import (
    MORE_FRAGILE,
    MORE_ROBUST,
    NOT_ESTIMABLE,
    WITHIN_NOISE,
    Sweep,
    SweepLosses,
    SweepRun,
    judge_stability,
    measure,
    sensitivity,
    sensitivity_interval,
    sensitivity_test,
    stability_test,
)

LRS = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1)
L0 = 5.5


def sweep(arm: str, curve, seeds: int = 2, noise: float = 0.0, rng=None, broken=()) -> Sweep:
    runs = []
    for lr, loss in zip(LRS, curve, strict=True):
        for s in range(seeds):
            value = loss + (rng.normal(0, noise) if rng is not None else 0.0)
            bad = lr in broken
            runs.append(
                SweepRun(arm, lr, s, L0, None if bad else value, not bad, 50 if bad else None)
            )
    return Sweep.of(arm, runs)


def test_sensitivity_is_wortsman_formula():
    # E over the grid of min(L, L0) minus the best: a diverged point counts as L0
    assert sensitivity([1.0, 2.0, 3.0]) == pytest.approx(1.0)
    base = sweep("baseline", [2.0, 1.0, 1.5, 3.0, 6.0, 6.0], broken=(3e-1,))
    m = measure(base)
    clamped = [2.0, 1.0, 1.5, 3.0, 5.5, 5.5]
    assert m.sensitivity == pytest.approx(np.mean(clamped) - 1.0)
    assert m.best_lr == 3e-3
    # 1e-1 ends above L0 but only 3e-1 broke here; stability is the runs' flag
    assert m.largest_stable_lr == 1e-1
    assert m.unstable == (0, 0, 0, 0, 0, 2)
    assert m.break_steps[-1] == (50, 50)


def test_interval_covers_and_needs_replicates():
    rng = np.random.default_rng(0)
    m = measure(sweep("a", [2.0, 1.0, 1.5, 3.0, 4.0, 5.0], noise=0.05, rng=rng))
    lo, hi = m.sensitivity_interval
    assert lo < m.sensitivity < hi
    single = measure(sweep("a", [2.0, 1.0, 1.5, 3.0, 4.0, 5.0], seeds=1))
    assert all(math.isnan(x) for x in single.sensitivity_interval)


def test_tests_see_a_real_difference():
    rng = np.random.default_rng(1)
    base = sweep("baseline", [2.0, 1.0, 1.2, 1.5, 2.0, 2.5], noise=0.02, rng=rng)
    fragile = sweep("x", [2.0, 1.0, 2.5, 4.0, 5.0, 5.0], noise=0.02, rng=rng, broken=LRS[3:])
    ds, p = sensitivity_test(fragile, base, permutations=999)
    assert ds > 0 and p < 0.01
    du, pu = stability_test(fragile, base)
    assert du == 6 and pu < 0.01
    verdicts = judge_stability({"baseline": base, "x": fragile}, "baseline", permutations=999)
    assert verdicts[0].verdict == MORE_FRAGILE
    robust = judge_stability({"baseline": fragile, "x": base}, "baseline", permutations=999)
    assert robust[0].verdict == MORE_ROBUST


def test_stability_test_exact_values():
    base = sweep("b", [1.0] * 6)
    same = sweep("a", [1.0] * 6)
    assert stability_test(same, base) == (0, 1.0)
    # all 12 of the arm's runs broke at 6 rates, none of the baseline's: p = (1/6)^6·2? no:
    # per rate the arm takes both broken runs of 2: C(2,2)/C(4,2) = 1/6, so p = 2·(1/6)^6
    broken = sweep("a", [1.0] * 6, broken=LRS)
    du, p = stability_test(broken, base)
    assert du == 12 and p == pytest.approx(2 * (1 / 6) ** 6)


def test_not_estimable_with_one_seed():
    base = sweep("baseline", [1.0] * 6)
    one = sweep("a", [1.0] * 6, seeds=1)
    (v,) = judge_stability({"baseline": base, "a": one}, "baseline", permutations=99)
    assert v.verdict == NOT_ESTIMABLE and v.p_sensitivity is None


def test_verdict_states_its_error_rate():
    base = sweep("baseline", [1.0] * 6, noise=0.1, rng=np.random.default_rng(2))
    arm = sweep("a", [1.0] * 6, noise=0.1, rng=np.random.default_rng(3))
    (v,) = judge_stability({"baseline": base, "a": arm}, "baseline", permutations=199)
    assert v.error_rate == "FWER" and v.correction == "holm" and v.alpha == 0.05
    assert v.verdict == WITHIN_NOISE


def test_calibrated_under_the_null():
    """Arms that are the baseline under another seed: the family-wise rate of any verdict other
    than within-noise stays at or below α (measured over 200 simulated stress audits of 4 arms,
    runs whose stability is random at the edge of the grid)."""
    rng = np.random.default_rng(7)
    curve = [2.0, 1.0, 1.1, 1.4, 2.2, 3.5]
    hits = 0
    trials = 200
    for _ in range(trials):
        sweeps = {}
        for arm in ("baseline", "a", "b", "c"):
            runs = []
            for lr, loss in zip(LRS, curve, strict=True):
                for s in range(2):
                    broke = lr >= 1e-1 and rng.random() < 0.5
                    value = loss + rng.normal(0, 0.1)
                    runs.append(SweepRun(arm, lr, s, L0, None if broke else value, not broke))
            sweeps[arm] = Sweep.of(arm, runs)
        verdicts = judge_stability(sweeps, "baseline", permutations=199)
        hits += any(v.verdict != WITHIN_NOISE for v in verdicts)
    assert hits / trials <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / trials)


def _tied_bottom(rates: int, seeds: int, sweeps: int) -> tuple[np.ndarray, float]:
    """Sweeps of a curve with every rate but the top two at the optimum (the winner's curse
    at its worst), normal seed noise: (sweeps, rates, seeds) losses and the true S."""
    mu = np.zeros(rates)
    mu[-2:] = (0.5, 1.0)
    rng = np.random.default_rng(0)
    return mu[None, :, None] + rng.normal(0, 0.1, (sweeps, rates, seeds)), sensitivity(mu)


def _fixed_best(losses: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The replaced construction: the plug-in contrast at the chosen best rate, held fixed,
    the seed variance pooled over rates, t with its df."""
    _, rates, seeds = losses.shape
    means = losses.mean(axis=2)
    s = means.mean(axis=1) - means.min(axis=1)
    pooled = losses.var(axis=2, ddof=1).mean(axis=1)
    half = stats.t.ppf(0.5 + confidence / 2, rates * (seeds - 1)) * np.sqrt(
        pooled * (rates - 1) / rates / seeds
    )
    return s - half, s + half


def _coverage(lo: np.ndarray, hi: np.ndarray, truth: float) -> float:
    return float(np.mean((lo <= truth) & (truth <= hi)))


def test_interval_holds_its_coverage_where_the_fixed_best_interval_does_not():
    rates, seeds, sweeps, confidence = 8, 3, 2000, 0.95
    losses, true_s = _tied_bottom(rates, seeds, sweeps)
    batch = SweepLosses(losses, np.zeros(losses.shape, bool), np.full(losses.shape, L0))
    slack = 3 * math.sqrt(confidence * (1 - confidence) / sweeps)
    assert _coverage(*sensitivity_interval(batch, confidence), true_s) >= confidence - slack
    assert _coverage(*_fixed_best(losses, confidence), true_s) < confidence - slack


def test_interval_holds_at_the_edge_of_stability_where_seeds_miss_divergences():
    """Two seeds; the fifth of six rates diverges with chance 0.3, the top with 0.95: a
    divergence the seeds did not draw leaves that rate's spread near 0."""
    sweeps, confidence, chance = 2000, 0.95, np.array([0, 0, 0, 0, 0.3, 0.95])
    mu = np.array([3.5, 3.2, 3.0, 3.1, 3.6, 4.2])
    rng = np.random.default_rng(2)
    shape = (sweeps, len(mu), 2)
    diverged = rng.random(shape) < chance[:, None]
    losses = np.where(diverged, L0, mu[:, None] + rng.normal(0, 0.05, shape))
    true_s = sensitivity(chance * L0 + (1 - chance) * mu)
    batch = SweepLosses(losses, diverged, np.full(shape, L0))
    slack = 3 * math.sqrt(confidence * (1 - confidence) / sweeps)
    assert _coverage(*sensitivity_interval(batch, confidence), true_s) >= confidence - slack
    assert _coverage(*_fixed_best(losses, confidence), true_s) < confidence - slack


def test_interval_with_one_clear_best_is_its_contrast_t_interval_bonferroni_below():
    rng = np.random.default_rng(3)
    built = sweep("a", (2.0, 1.0, 1.5, 3.0, 4.0, 5.0), seeds=3, noise=0.01, rng=rng)
    m = measure(built)
    losses = built.clamped()
    rates, seeds = len(losses), len(losses[0])
    dof = rates * (seeds - 1)
    pooled = np.mean([v.var(ddof=1) for v in losses])
    se = math.sqrt(pooled * ((rates - 1) / rates**2 + (1 - 1 / rates) ** 2) / seeds)
    lo, hi = m.sensitivity_interval
    assert hi == pytest.approx(m.sensitivity + stats.t.ppf(0.975, dof) * se)
    assert lo == pytest.approx(m.sensitivity - stats.t.ppf(1 - 0.025 / rates, dof) * se)


def test_docs_show_the_stored_coverage_and_it_holds(monkeypatch):
    """docs/stability.md's table is the one benchmarks/stress_coverage.py made of its stored
    record, and every cell of that record covers S within 3 SE of 95%."""
    import importlib.util
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).parents[2]
    spec = importlib.util.spec_from_file_location("cov", root / "benchmarks/stress_coverage.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "cov", bench)  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    record = json.loads(bench.OUT.read_text())
    cells = [bench.Cell(**cell) for cell in record["cells"]]
    docs = (root / "docs" / "stability.md").read_text()
    assert bench.table(cells, record["reps"]) in docs, "regenerate: benchmarks/stress_coverage.py"
    slack = 3 * math.sqrt(0.95 * 0.05 / record["reps"])
    assert min(c.cover_after for c in cells) >= 0.95 - slack
