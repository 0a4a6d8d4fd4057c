"""Factorial interactions: the classical contrast, its seed-noise test, and the additive fit."""

import math

import numpy as np
import pytest

from archaudit.errors import ConfigError
from archaudit.stats import interactions
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.records.errors import DesignError
from archaudit.stats.records.table import Row, Table

NOISE = (-0.01, 0.0, 0.01)
MEANS = {"baseline": 0.50, "qk": 0.55, "gqa": 0.40, "qk+gqa": 0.47}


def factorial(means: dict[str, float], noise=NOISE) -> Table:
    return Table(
        tuple(
            Row(arm=arm, scale="s", seed=seed, metric="acc", value=mean + jitter)
            for arm, mean in means.items()
            for seed, jitter in enumerate(noise)
        )
    )


def test_the_interaction_is_the_classical_contrast_not_a_residual():
    """Defect: y₀₀ = y₁₀ = y₀₁ = 0, y₁₁ = 4 has I = 4; the additive residual said 1, and said 1
    for the baseline and −1 for each single choice too."""
    result = interactions(factorial({"baseline": 0, "a": 0, "b": 0, "a+b": 4}), "acc")
    by_arm = {c.arm: c for c in result.combinations}
    assert by_arm["a+b"].interaction == pytest.approx(4.0)
    assert by_arm["a+b"].interaction_sigmas == pytest.approx(4.0 / 0.01)
    for arm in ("baseline", "a", "b"):
        assert math.isnan(by_arm[arm].interaction) and math.isnan(by_arm[arm].p)
    assert result.to_dict()["combinations"][0]["interaction"] is None


def test_two_by_two_contrast_standard_error_and_test():
    y00, y10, y01, y11 = (MEANS[arm] for arm in ("baseline", "qk", "gqa", "qk+gqa"))
    result = interactions(factorial(MEANS), "acc")
    combo = {c.arm: c for c in result.combinations}["qk+gqa"]
    assert combo.interaction == pytest.approx(y11 - y10 - y01 + y00)
    # σ pooled over the 4 cells (each sd 0.01), df = 4·(3 − 1); SE = σ·√(4/3).
    assert (result.sigma, result.sigma_dof, combo.df) == (pytest.approx(0.01), 8, 8)
    assert combo.se == pytest.approx(0.01 * math.sqrt(4 / 3))
    assert combo.t == pytest.approx(combo.interaction / combo.se)
    stats = pytest.importorskip("scipy.stats")
    assert combo.p == pytest.approx(2 * stats.t.sf(abs(combo.t), 8), rel=1e-6)
    assert combo.p_adj == pytest.approx(combo.p)  # the only contrast tested


def test_contrast_matches_statsmodels_cell_means_ols():
    """The same contrast, SE, t and p from statsmodels' OLS on the seeds (cell-means model)."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(3)
    means = {"baseline": 1.0, "a": 1.2, "b": 0.9, "a+b": 1.6}
    seeds = {"baseline": 4, "a": 2, "b": 3, "a+b": 5}  # unbalanced on purpose
    rows, cells, y = [], [], []
    for index, (arm, mean) in enumerate(means.items()):
        for seed in range(seeds[arm]):
            value = mean + 0.05 * rng.standard_normal()
            rows.append(Row(arm=arm, scale="s", seed=seed, metric="acc", value=value))
            cells.append(index)
            y.append(value)
    result = interactions(Table(tuple(rows)), "acc")
    combo = {c.arm: c for c in result.combinations}["a+b"]
    fit = sm.OLS(np.array(y), np.eye(4)[cells]).fit()
    test = fit.t_test(np.array([[1.0, -1.0, -1.0, 1.0]]))
    assert combo.interaction == pytest.approx(float(test.effect[0]))
    assert combo.se == pytest.approx(float(test.sd[0, 0]))
    assert combo.t == pytest.approx(float(test.tvalue[0, 0]))
    assert combo.p == pytest.approx(float(test.pvalue), rel=1e-6)
    assert combo.df == fit.df_resid


def test_three_way_contrast_is_eight_times_the_plus_minus_one_coefficient():
    """In a 2³ design with ±1 coding the OLS coefficient of a·b·c is I_abc / 2³."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(4)
    names = ("a", "b", "c")
    rows, codes, y = [], [], []
    for cell in range(8):
        on = [names[j] for j in range(3) if cell >> j & 1]
        arm = "+".join(on) or "baseline"
        mean = 1.0 + 0.1 * len(on) + (0.3 if len(on) == 3 else 0.0)
        for seed in range(3):
            value = mean + 0.02 * rng.standard_normal()
            rows.append(Row(arm=arm, scale="s", seed=seed, metric="acc", value=value))
            x = [1.0 if name in on else -1.0 for name in names]
            codes.append([1.0, *x, x[0] * x[1], x[0] * x[2], x[1] * x[2], x[0] * x[1] * x[2]])
            y.append(value)
    result = interactions(Table(tuple(rows)), "acc")
    combo = {c.arm: c for c in result.combinations}["a+b+c"]
    fit = sm.OLS(np.array(y), np.array(codes)).fit()
    assert combo.interaction == pytest.approx(8 * fit.params[-1])
    assert combo.se == pytest.approx(8 * fit.bse[-1])
    assert combo.p == pytest.approx(fit.pvalues[-1], rel=1e-6)
    # Two-way contrasts are taken with the third choice off: I_ab = y_ab − y_a − y_b + y_∅.
    means = {c.arm: c.observed for c in result.combinations}
    expected = means["a+b"] - means["a"] - means["b"] + means["baseline"]
    assert {c.arm: c for c in result.combinations}["a+b"].interaction == pytest.approx(expected)
    assert result.notes == ()


def test_a_missing_sub_combination_leaves_the_contrast_undefined():
    means = {"baseline": 0.5, "a": 0.6, "b": 0.4, "c": 0.5, "a+b": 0.6, "a+b+c": 0.7}
    result = interactions(factorial(means), "acc")
    by_arm = {c.arm: c for c in result.combinations}
    assert by_arm["a+b"].interaction == pytest.approx(0.6 - 0.6 - 0.4 + 0.5)
    assert math.isnan(by_arm["a+b+c"].interaction)  # a+c and b+c were not run
    assert "a+b+c" in result.notes[0]


def test_lower_is_better_orients_the_contrast_and_the_harmful_choices():
    higher = interactions(factorial(MEANS), "acc")
    lower = interactions(factorial(MEANS), "acc", JudgeOptions(lower_is_better=True))
    assert lower.harmful == ("qk",) and higher.harmful == ("gqa",)
    pair = [{c.arm: c for c in r.combinations}["qk+gqa"] for r in (higher, lower)]
    assert pair[1].interaction == pytest.approx(-pair[0].interaction)
    assert pair[1].p == pytest.approx(pair[0].p)
    assert pair[1].observed == pytest.approx(MEANS["qk+gqa"])


def test_additive_fit_and_harmful_count_r2():
    y00, y10, y01, y11 = (MEANS[arm] for arm in ("baseline", "qk", "gqa", "qk+gqa"))
    result = interactions(factorial(MEANS), "acc")
    quarter = (y11 - y10 - y01 + y00) / 4  # the additive fit's residuals are ±I/4
    by_arm = {c.arm: c for c in result.combinations}
    assert by_arm["qk+gqa"].predicted == pytest.approx(y11 - quarter)
    assert result.main_effects["qk"] == pytest.approx(((y10 - y00) + (y11 - y01)) / 2)
    assert result.main_effects["gqa"] == pytest.approx(((y01 - y00) + (y11 - y10)) / 2)
    assert result.harmful == ("gqa",)
    mean = (y00 + y10 + y01 + y11) / 4
    total = sum((y - mean) ** 2 for y in (y00, y10, y01, y11))
    assert result.r2_additive == pytest.approx(1 - 4 * quarter**2 / total)
    # Harmful count 0 for {baseline, qk}, 1 for {gqa, qk+gqa}: the fit is the group means.
    within = ((y00 - y10) ** 2 + (y01 - y11) ** 2) / 2
    assert result.r2_harmful_count == pytest.approx(1 - within / total)
    assert by_arm["qk+gqa"].harmful_count == 1


def test_not_a_factorial_design():
    with pytest.raises(DesignError, match="additive model"):
        interactions(factorial({"baseline": 0.5, "qk": 0.55, "gqa": 0.4}), "acc")


def test_the_contrasts_are_corrected_as_the_options_say():
    """Holm by default; the options' correction otherwise (Dunnett's many-to-one test refused)."""
    means = {"baseline": 0.5, "a": 0.52, "b": 0.51, "c": 0.49}
    means |= {"a+b": 0.55, "a+c": 0.5, "b+c": 0.52, "a+b+c": 0.53}
    table = factorial(means, noise=(-0.006, 0.0, 0.005))
    holm, bonferroni, none = (
        interactions(table, "acc", JudgeOptions(correction=c))
        for c in ("holm", "bonferroni", "none")
    )
    p = [c.p for c in none.combinations if not math.isnan(c.p)]
    assert len(p) == 4 and [c.p_adj for c in none.combinations if not math.isnan(c.p)] == p
    bonferroni_p = [c.p_adj for c in bonferroni.combinations if not math.isnan(c.p)]
    assert bonferroni_p == pytest.approx([min(1.0, 4 * value) for value in p])
    holm_p = [c.p_adj for c in holm.combinations if not math.isnan(c.p)]
    assert all(h <= b for h, b in zip(holm_p, bonferroni_p, strict=True)) and holm_p != bonferroni_p
    assert holm.to_json() == interactions(table, "acc").to_json()
    with pytest.raises(ConfigError, match="dunnett"):
        interactions(table, "acc", JudgeOptions(correction="dunnett"))
