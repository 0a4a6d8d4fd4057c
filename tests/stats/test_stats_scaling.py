"""Scaling-law fit: recovery of a known surface, the compute-optimal closed form, intervals."""

import math

import numpy as np
import pytest

from archaudit.stats import fit_loss_surface, fit_scaling_law
from archaudit.stats.analyses.scaling import LossSurface
from archaudit.stats.records.errors import DesignError
from archaudit.stats.records.table import Row, Table

# Hoffmann et al. (2022)'s published fit, used as ground truth.
TRUTH = LossSurface(
    E=1.69, A=406.4, size_exponent=0.34, B=410.7, data_exponent=0.28, huber_loss=0.0
)
SIZES = np.geomspace(1e7, 1e9, 6)
TOKENS = np.geomspace(2e9, 2e11, 4)


def grid() -> tuple[np.ndarray, np.ndarray]:
    n, d = np.meshgrid(SIZES, TOKENS)
    return n.ravel(), d.ravel()


def test_recovers_a_noise_free_surface():
    n, d = grid()
    fitted = fit_loss_surface(n, d, TRUTH.predict(n, d))
    for name in ("E", "A", "size_exponent", "B", "data_exponent"):
        assert getattr(fitted, name) == pytest.approx(getattr(TRUTH, name), rel=1e-3), name


def test_compute_optimal_matches_a_brute_force_search():
    budget = 1e21
    n_opt, d_opt = TRUTH.compute_optimal(budget)
    candidates = np.geomspace(1e6, 1e13, 200_001)
    losses = TRUTH.predict(candidates, budget / (6 * candidates))
    assert n_opt == pytest.approx(candidates[np.argmin(losses)], rel=1e-3)
    assert 6 * n_opt * d_opt == pytest.approx(budget)


def scaling_table(noise: float, seed: int = 0) -> Table:
    rng = np.random.default_rng(seed)
    rows = []
    for index, (n, d) in enumerate(zip(*grid(), strict=True)):
        loss = float(TRUTH.predict(n, d)) * math.exp(rng.normal(0, noise))
        for metric, value in (("params", n), ("tokens", d), ("val_loss", loss)):
            rows.append(
                Row(arm="baseline", scale=f"run{index}", seed=0, metric=metric, value=float(value))
            )
    return Table(tuple(rows))


def test_fit_from_a_table_with_intervals():
    table = scaling_table(noise=0.002)
    fit = fit_scaling_law(table, budget=1e21, n_boot=40, seed=1)
    assert fit.n_points == 24
    assert fit.surface.size_exponent == pytest.approx(TRUTH.size_exponent, abs=0.05)
    assert fit.surface.data_exponent == pytest.approx(TRUTH.data_exponent, abs=0.05)
    for name in ("E", "alpha", "beta", "n_opt"):
        low, high = fit.intervals[name]
        assert low <= high
    assert fit.intervals["E"][0] < TRUTH.E * 1.05 and fit.intervals["E"][1] > TRUTH.E * 0.95
    again = fit_scaling_law(table, budget=1e21, n_boot=40, seed=1)
    assert again.intervals == fit.intervals


def test_too_few_sizes_is_a_design_error():
    rows = [row for row in scaling_table(0.0).rows if row.scale in {"run0", "run1", "run2"}]
    with pytest.raises(DesignError, match="fewer than 5 distinct"):
        fit_scaling_law(Table(tuple(rows)), n_boot=5)


def one_count_per_size_table() -> Table:
    """Six sizes, each trained at 20 tokens per parameter: N and D never vary apart."""
    rows = []
    for index, n in enumerate(SIZES):
        values = {"params": n, "tokens": 20 * n, "val_loss": float(TRUTH.predict(n, 20 * n))}
        rows += [Row("baseline", f"run{index}", 0, m, float(v)) for m, v in values.items()]
    return Table(tuple(rows))


def test_one_tokens_count_per_size_is_refused_not_fitted():
    with pytest.raises(DesignError, match="one tokens count per size"):
        fit_scaling_law(one_count_per_size_table(), n_boot=5)


def test_two_tokens_counts_are_refused():
    rows = [row for row in scaling_table(0.0).rows if int(row.scale[3:]) < 12]
    with pytest.raises(DesignError, match="2 tokens count"):
        fit_scaling_law(Table(tuple(rows)), n_boot=5)


def test_a_good_fit_has_no_collapse_notes():
    assert fit_scaling_law(scaling_table(noise=0.002), n_boot=20, seed=1).notes == ()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"E": 4.33e-115}, "E = 4.33e-115 ran off to zero"),
        ({"size_exponent": 0.0}, "alpha = 0 lies outside (0, 10]"),
        ({"data_exponent": 37.0}, "beta = 37 lies outside (0, 10]"),
    ],
)
def test_a_collapsed_surface_is_flagged_in_one_line(change, words):
    from dataclasses import replace

    from archaudit.stats.analyses.scaling import collapse_notes

    notes = collapse_notes(replace(TRUTH, **change), {"E": (1.6, 1.8)}, smallest_loss=2.0)
    assert len(notes) == 1 and notes[0].startswith(words)


def test_a_zero_width_interval_is_flagged():
    from archaudit.stats.analyses.scaling import collapse_notes

    notes = collapse_notes(TRUTH, {"E": (1.69, 1.69), "A": (300.0, 500.0)}, smallest_loss=2.0)
    assert notes == (
        "zero-width interval for E: every bootstrap refit landed on the same point, which "
        "measures the optimizer, not the uncertainty",
    )


def test_the_exponents_keep_their_published_json_keys():
    """Issue 56: `alpha` in code is only ever a significance level; the law's exponents are
    `size_exponent` and `data_exponent`, written under their published names."""
    data = TRUTH.to_dict()
    assert list(data) == ["E", "A", "alpha", "B", "beta", "huber_loss"]
    assert (data["alpha"], data["beta"]) == (TRUTH.size_exponent, TRUTH.data_exponent)
    assert not hasattr(TRUTH, "alpha") and not hasattr(TRUTH, "beta")
