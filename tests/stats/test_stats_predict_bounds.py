"""The lower bound on a constant arm's width where a shape is held within 5 points
(benchmarks/predict_coverage_bounds.py), and the doc's tables made from the stored records."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def bounds():
    spec = importlib.util.spec_from_file_location(
        "predict_coverage_bounds", ROOT / "benchmarks" / "predict_coverage_bounds.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["predict_coverage_bounds"] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_a_shape_whose_ladder_is_a_constant_costs_its_gap_times_one_minus_2a(bounds):
    """`late`: TV 0 at the constant's level, so the bound is gap·(1 − 2a), a = 0.25 at 80%."""
    ladder, gap, sd = np.ones(5), 0.75, 0.3
    at_one = bounds.tv_bounds(ladder, 1.0 - gap, sd, 0.25, np.array([1.0]))[0]
    assert at_one == pytest.approx(gap * (1.0 - 2.0 * 0.25))
    b, best = bounds.tv_bound(ladder, 1.0 - gap, sd, 0.8)
    assert (b, best) == (pytest.approx(1.0), pytest.approx(at_one))
    assert bounds.total_variation(0.0) == 0.0
    assert bounds.combined_width(ladder, 1.0 - gap, sd, 0.8) >= best


def test_a_shape_far_from_every_constant_costs_nothing(bounds):
    """A ladder that no constant comes near (D huge at every level): TV 1, bound 0."""
    ladder = np.array([0.0, 50.0, 0.0, 50.0])
    b, width = bounds.tv_bound(ladder, 1.0, 0.01, 0.8)
    assert width == 0.0
    assert bounds.total_variation(np.sqrt(np.sum((ladder - b) ** 2)) / 0.01) == 1.0


def test_the_tv_bound_by_hand(bounds):
    """Two scales Δ = 0, 0.2, target 1, per-scale SD 0.2, a constant at 0.1: D = √2/2, TV =
    erf(D/(2√2)) = erf(1/4), bound = 0.9·(1 − 0.5 − TV)."""
    ladder = np.array([0.0, 0.2])
    got = bounds.tv_bounds(ladder, 1.0, 0.2, 0.25, np.array([0.1]))[0]
    assert got == pytest.approx(0.9 * (0.5 - math.erf(0.25)))
    assert got == pytest.approx(0.2013, abs=1e-4)


def test_a_constant_shape_gives_pratts_width_of_its_mean(bounds):
    """A constant held at 1 − a: Pratt's least mean width ∫Φ(z − |t|/τ)dt = 2τ(zΦ(z) + φ(z)),
    τ the SD of the mean of the scales' Δ̂."""
    sd, scales = 0.4, 4
    got = bounds.combined_width(np.full(scales, 2.0), 2.0, sd, 0.8)
    z, tau = stats.norm.ppf(0.75), sd / math.sqrt(scales)
    assert got == pytest.approx(2 * tau * (z * stats.norm.cdf(z) + stats.norm.pdf(z)), rel=1e-4)


def test_the_contrast_class_sees_delta_hat_alone_and_the_arm_mean_with_many_neighbours(bounds):
    assert bounds.scale_sd(0.3, 2, 0) == pytest.approx(0.3 * math.sqrt(2.0 / 2))
    assert bounds.scale_sd(0.3, 2, None) == pytest.approx(0.3 / math.sqrt(2))
    assert bounds.scale_sd(0.3, 2, 10_000) == pytest.approx(0.3 / math.sqrt(2), rel=1e-4)


def test_the_straddle_holds_both_the_constant_and_late_at_1_minus_a(bounds):
    """[m − gap − h, m + h]: its width is the one that holds each truth at 75% exactly."""
    gap, sd, scales = 1.0, 0.25, 5
    width = bounds.straddle_width(gap, sd, scales, 0.8)
    h, tau = (width - gap) / 2.0, sd / math.sqrt(scales)
    held = stats.norm.cdf((gap + h) / tau) - stats.norm.cdf(-h / tau)
    assert held == pytest.approx(0.75)
    assert width > bounds.combined_width(np.ones(scales), 1.0 - gap, sd, 0.8)


def test_the_doc_shows_the_tables_of_the_stored_records(monkeypatch):
    """docs/predict.md's `--shapes` block is the one the benchmark makes of its records."""
    import json

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bench = importlib.import_module("predict_coverage")
    after, before = (
        json.loads((ROOT / "benchmarks" / f"predict_coverage-shapes-{label}.json").read_text())
        for label in ("wave17", "wave16")
    )
    docs = (ROOT / "docs" / "predict.md").read_text()
    assert bench.shapes_table(after, before) in docs, (
        "regenerate: benchmarks/predict_coverage.py --table "
        "benchmarks/predict_coverage-shapes-wave17.json "
        "benchmarks/predict_coverage-shapes-wave16.json"
    )


def test_a_linear_shape_at_every_size_is_the_least_squares_lines_prediction(bounds):
    """The family b + k·(linear) is every line: s is the line's prediction SD at the target."""
    u = np.arange(4.0)
    sd, target_u = 0.3, 7.0
    got = bounds.family_sd(1.5 - u / 3.0, 1.5 - target_u / 3.0, sd)
    centred = u - u.mean()
    line = sd * math.sqrt(0.25 + (target_u - u.mean()) ** 2 / np.sum(centred**2))
    assert got == pytest.approx(line)


def test_the_every_size_width_is_pratts_integral_in_closed_form(bounds):
    """∫Φ(z − |t|/s)dt = 2s(zΦ(z) + φ(z)), z the 75% quantile at 80% within 5 points."""
    ladder = -0.5 * 2.0 ** (np.arange(5.0) / 4.0)
    target, sd = -0.5 * 2.0 ** (8.0 / 4.0), 0.3
    s = bounds.family_sd(ladder, target, sd)
    t = np.linspace(-40 * s, 40 * s, 400_001)
    numeric = np.trapezoid(stats.norm.cdf(stats.norm.ppf(0.75) - np.abs(t) / s), t)
    assert bounds.every_size_width(ladder, target, sd, 0.8) == pytest.approx(numeric, rel=1e-6)


def test_a_shape_flat_on_the_ladder_is_out_of_reach_at_every_size_and_a_constant_is_not(bounds):
    """`late` (flat on the ladder, moving beyond it): s = ∞. A constant: the mean's SD, and its
    bound equals the constant's Pratt width at its own size."""
    assert math.isinf(bounds.family_sd(np.ones(4), 0.25, 0.3))
    assert bounds.family_sd(np.ones(4), 1.0, 0.3) == pytest.approx(0.15)
    assert bounds.every_size_width(np.ones(4), 1.0, 0.3, 0.8) == pytest.approx(
        bounds.combined_width(np.ones(4), 1.0, 0.3, 0.8), rel=1e-4
    )


def test_the_every_size_bound_is_below_an_interval_that_holds_every_size(bounds):
    """The family's least-squares prediction ± z₀.₈₇₅·s holds every member at exactly 75%
    (simulated at three sizes and offsets), so no bound may exceed its width."""
    rng = np.random.default_rng(0)
    u, target_u, sd = np.arange(4.0), 7.0, 0.3
    shape = -0.5 * 2.0 ** (u / 4.0)
    g_t = -0.5 * 2.0 ** (target_u / 4.0)
    design = np.column_stack([np.ones(4), shape])
    lever = np.array([1.0, g_t]) @ np.linalg.pinv(design)
    s = bounds.family_sd(shape, g_t, sd)
    half = stats.norm.ppf(0.875) * s
    for b, k in ((0.0, 0.0), (1.0, 3.0), (-2.0, -10.0)):
        draws = b + k * shape + sd * rng.standard_normal((40_000, 4))
        held = np.abs(draws @ lever - (b + k * g_t)) <= half
        assert held.mean() == pytest.approx(0.75, abs=0.01)
    assert bounds.every_size_width(shape, g_t, sd, 0.8) < 2 * half


def test_a_group_exactly_five_points_off_is_within(monkeypatch):
    """Issue 55's tolerance is "within 5 points": 100% at 95% and 75% at 80% are within, though
    in floating point 1.0 - 0.95 > 0.05 (the benchmark counted them off until wave 16)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bench = importlib.import_module("predict_coverage")
    assert not bench.off_by_more(1.0, 0.95) and not bench.off_by_more(0.75, 0.8)
    assert not bench.off_by_more(0.85, 0.8)
    assert bench.off_by_more(0.748, 0.8) and bench.off_by_more(0.852, 0.8)
