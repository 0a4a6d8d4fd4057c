"""`judge` against an independent re-derivation with scipy/statsmodels, and the verdict rules."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from archaudit.stats import judge
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.inference.family_test import PRIOR_DF, ROBUST_TAIL
from archaudit.stats.records.table import Row, Table
from archaudit.stats.simulation.power import Design, minimum_detectable_effect


def protected(group: np.ndarray, others: list[np.ndarray]) -> tuple[float, float]:
    """(moderated variance, d₀) of `group`: toward the others' pooled variance with PRIOR_DF
    prior df, scaled by min(1, P(F >= s²/prior) / ROBUST_TAIL)."""
    var, df = np.var(group, ddof=1), len(group) - 1
    rest = sum(len(g) - 1 for g in others)
    prior = sum((len(g) - 1) * np.var(g, ddof=1) for g in others) / rest
    d0 = PRIOR_DF * min(1.0, stats.f.sf(var / prior, df, rest) / ROBUST_TAIL)
    return (d0 * prior + df * var) / (d0 + df), d0


def reference(
    values: dict[str, list[float]],
    sign: float,
    alpha: float,
    method: str,
    paper: bool = False,
    level: float | None = None,
    demoted: bool = False,
) -> dict:
    """Δ, z, p, p_adj and verdict per arm, straight from PROTOCOL.md and docs/verdicts.md with
    scipy/statsmodels: p_adj compared with the calibrated `level` (α by default), nothing
    significant when the design is `demoted` (above α) or the correction is BH (uncalibrated)."""
    level_p = alpha if level is None else level
    base = np.array(values["baseline"])
    arms = [arm for arm in values if arm != "baseline"]
    arrays = {a: np.array(values[a]) for a in arms}
    groups = [base, *(arrays[a] for a in arms if len(values[a]) > 1)]
    dof = sum(len(g) - 1 for g in groups)
    sigma = np.sqrt(sum((len(g) - 1) * np.var(g, ddof=1) for g in groups) / dof)
    single = any(len(values[a]) == 1 for a in arms)
    # a single seed's σ: bounded by 6× and the 90% upper bound of the widest multi-seed arm
    ratios = [
        np.std(values[a], ddof=1) / sigma / np.sqrt(stats.f.ppf(0.1, len(values[a]) - 1, dof))
        for a in arms
        if len(values[a]) > 1
    ]
    bound = max(6.0, *ratios) if ratios else np.inf
    level = 1 - alpha / len(arms)  # Bonferroni-simultaneous intervals
    result = {}
    for arm in arms:
        x = arrays[arm]
        delta = sign * (x.mean() - base.mean())
        p_z = 2 * stats.norm.sf(abs(delta / sigma))
        if paper:
            p, test = p_z, "z"
            half = stats.norm.ppf(1 - (1 - level) / 2) * sigma
            interval = (delta - half, delta + half)
        elif len(x) == 1:  # its seed σ bounded (∞ without a multi-seed arm: p = 1)
            se = sigma * np.sqrt(bound**2 + 1 / len(base))
            p, test = 2 * stats.t.sf(abs(delta / se), dof), "robust"
            interval = stats.t.interval(level, dof, loc=delta, scale=se)
        elif single:  # a robust family: plain Welch for its multi-seed arms
            welch = stats.ttest_ind(x, base, equal_var=False)
            p, test = welch.pvalue, "robust"
            low, high = welch.confidence_interval(level)  # for mean(x) − mean(base)
            interval = (low, high) if sign > 0 else (-high, -low)
        else:  # protected moderated Welch: toward the other groups' pool, robust d₀ (issue 53)
            var_x, d_x = protected(x, [g for g in groups if g is not x and g is not base] + [base])
            var_b, d_b = protected(base, [g for g in groups if g is not base])
            var_b = max(var_b, np.var(base, ddof=1))  # the baseline never below its own
            se_x, se_b = var_x / len(x), var_b / len(base)
            df_x, df_b = min(len(x) - 1 + d_x, dof), min(len(base) - 1 + d_b, dof)
            df = (se_x + se_b) ** 2 / (se_x**2 / df_x + se_b**2 / df_b)
            se = np.sqrt(se_x + se_b)
            p, test = 2 * stats.t.sf(abs(delta / se), df), "welch"
            interval = stats.t.interval(level, df, loc=delta, scale=se)
        plain = 2 * stats.t.sf(abs(delta / (sigma * np.sqrt(1 + 1 / len(base)))), dof)
        result[arm] = {"delta": delta, "z": delta / sigma, "p": p, "test": test}
        result[arm]["plain"] = plain if len(x) == 1 and not paper else p
        result[arm]["interval"] = interval
    adjusted = multipletests([result[a]["p"] for a in arms], method=method)[1]
    plain = multipletests([result[a]["plain"] for a in arms], method=method)[1]
    for arm, p_adj, p_plain in zip(arms, adjusted, plain, strict=True):
        entry = result[arm]
        entry["p_adj"] = p_adj
        if abs(entry["delta"]) < 2 * sigma:
            entry["verdict"] = "within-noise"
        elif p_adj < level_p and not demoted and method in ("holm", "bonferroni"):
            entry["verdict"] = "improver" if entry["delta"] > 0 else "regressor"
        else:
            # only a single seed can be a candidate (its spread unseen); BH's step-up can put a
            # multi-seed arm's p under level among the plain p's without making it one
            single_seed = len(values[arm]) == 1
            raised = single_seed and p_plain < level_p and p_adj >= level_p
            level_name = "candidate-" if raised else "nominal-"
            entry["verdict"] = level_name + ("improver" if entry["delta"] > 0 else "regressor")
    return result


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("lower_is_better", [False, True])
@pytest.mark.parametrize("paper", [False, True])
def test_judge_matches_reference(make_table, seed, lower_is_better, paper):
    rng = np.random.default_rng(seed)
    values = {"baseline": list(rng.normal(0, 1, rng.integers(2, 6)))}
    for i in range(int(rng.integers(1, 8))):
        effect = rng.choice([0.0, 1.0, 3.0, -4.0, 8.0])
        values[f"arm{i}"] = list(rng.normal(effect, 1, rng.integers(1 + seed % 2, 5)))
    method = ["holm", "bonferroni", "fdr_bh"][seed % 3]
    ours = {"fdr_bh": "bh"}.get(method, method)
    judgement = judge(
        make_table(values),
        "acc",
        JudgeOptions(
            lower_is_better=lower_is_better, correction=ours, reference="normal" if paper else "t"
        ),
    )
    sign = -1.0 if lower_is_better else 1.0
    expected = reference(
        values, sign, 0.05, method, paper, judgement.level, judgement.design_above_alpha
    )
    assert judgement.m == len(expected)
    assert judgement.calibrated is not paper
    for verdict in judgement.arms:
        entry = expected[verdict.arm]
        assert verdict.delta == pytest.approx(entry["delta"], rel=1e-12, abs=1e-12)
        assert verdict.z == pytest.approx(entry["z"], rel=1e-12, abs=1e-12)
        assert verdict.p == pytest.approx(entry["p"], rel=1e-8)
        assert verdict.p_adj == pytest.approx(entry["p_adj"], rel=1e-8)
        assert verdict.verdict == entry["verdict"]
        assert verdict.test == entry["test"] == judgement.test
        assert verdict.interval == pytest.approx(entry["interval"], rel=1e-8, abs=1e-10)
        # the interval excludes 0 exactly when Bonferroni rejects
        low, high = verdict.interval
        assert (low > 0 or high < 0) == (min(1.0, verdict.p * judgement.m) < 0.05)


def test_lower_is_better_flips_the_sign(make_table):
    values = {"baseline": [3.0, 3.1, 2.9], "lower": [2.0, 2.1, 1.9]}
    table = make_table(values, metric="val_loss")
    higher = judge(table, "val_loss", JudgeOptions(lower_is_better=False))
    lower = judge(table, "val_loss", JudgeOptions(lower_is_better=True))
    assert higher.arm("lower").delta == pytest.approx(-1.0)
    assert lower.arm("lower").delta == pytest.approx(1.0)
    assert lower.arm("lower").t == pytest.approx(-higher.arm("lower").t)
    assert lower.arm("lower").verdict == "improver"
    assert higher.arm("lower").verdict == "regressor"
    assert any(
        "is lower-is-better (declared) but is judged the other way" in n for n in higher.notes
    )
    assert "Δ > 0 means better" in lower.direction


@pytest.mark.parametrize(
    "metric", ["loss", "val_loss", "ppl", "perplexity", "bpb", "bits_per_byte", "error"]
)
def test_loss_like_names_are_lower_is_better_without_a_flag(make_table, metric):
    table = make_table({"baseline": [3.0, 3.1, 2.9], "lower": [2.0, 2.1, 1.9]}, metric=metric)
    judgement = judge(table, metric)
    assert judgement.lower_is_better
    assert judgement.arm("lower").delta == pytest.approx(1.0)
    assert judgement.arm("lower").verdict == "improver"
    assert judgement.direction.startswith("Δ > 0 means better (lower")
    assert not judge(table, metric, JudgeOptions(lower_is_better=False)).lower_is_better
    assert not judge(
        make_table({"baseline": [1, 2], "a": [3]}, metric="acc"), "acc"
    ).lower_is_better


def test_anchors_pool_the_noise_floor(make_table):
    values = {"baseline": [1.0, 1.2, 1.1], "anchor": [2.0, 2.6, 2.3, 2.9], "a": [1.5]}
    judgement = judge(make_table(values), "acc", JudgeOptions(anchors=["anchor"]))
    ss = sum((len(v) - 1) * np.var(v, ddof=1) for v in (values["baseline"], values["anchor"]))
    assert judgement.sigma == pytest.approx(np.sqrt(ss / 5))
    assert judgement.sigma_dof == 5
    assert judgement.m == 2  # the anchor is an arm of the family too
    assert judgement.baseline_mean == pytest.approx(1.1)


def rows(
    arm: str,
    values: list[float | None],
    status: str = "ok",
    metric: str = "acc",
    scale: str = "s",
    **extra,
) -> list[Row]:
    return [
        Row(
            arm=arm,
            scale=scale,
            seed=seed,
            metric=metric,
            value=float("nan") if value is None else value,
            status=status,
            **extra,
        )
        for seed, value in enumerate(values)
    ]


def test_diverged_and_incomplete_arms_are_not_tested():
    table = Table(
        (
            *rows("baseline", [0.50, 0.51, 0.49]),
            *rows("blew_up", [0.2], status="diverged", step=700),
            *rows("blew_up", [0.6, 0.6], scale="s")[1:],
            *rows("half_done", [0.7, None]),
            *rows("evals_missing", [0.4], metric="other"),
            *rows("fine", [0.9, 0.91]),
        )
    )
    judgement = judge(table, "acc")
    verdicts = {v.arm: v for v in judgement.arms}
    assert verdicts["blew_up"].verdict == "diverged"
    assert verdicts["blew_up"].diverged_step == 700
    assert verdicts["half_done"].verdict == "incomplete"
    assert verdicts["evals_missing"].verdict == "incomplete"
    assert verdicts["fine"].verdict == "improver"
    assert judgement.m == 1
    assert np.isnan(verdicts["half_done"].p_adj) and verdicts["half_done"].test is None


def test_within_noise_wins_over_significance(make_table):
    # Many tight seeds: Welch is very significant, but |Δ| < 2σ is within noise by rule.
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, 40)
    # σ pools both groups (≈ 0.71·SD of the baseline), so 1.2 baseline SDs is under 2σ.
    arm = rng.normal(0, 0.01, 40) + base.mean() + 1.2 * np.std(base, ddof=1)
    verdict = judge(make_table({"baseline": base, "arm": arm}), "acc").arm("arm")
    assert verdict.p_adj < 1e-6
    assert verdict.verdict == "within-noise"


def test_nominal_when_beyond_two_sigma_but_not_significant(make_table):
    values = {"baseline": [0.0, 1.0, -1.0], "a": [2.4], "b": [0.1], "c": [-0.2], "d": [0.3]}
    # equal variance declared: the prediction-interval t of a single seed
    verdict = judge(
        make_table(values), "acc", JudgeOptions(correction="bonferroni", equal_variance=True)
    )
    verdict = verdict.arm("a")
    assert verdict.z == pytest.approx(2.4)
    t = 2.4 / np.sqrt(1 + 1 / 3)  # the prediction-interval t, σ from 2 degrees of freedom
    assert verdict.statistic == pytest.approx(t)
    assert verdict.p_adj == pytest.approx(min(1.0, 4 * 2 * stats.t.sf(t, 2)))
    assert verdict.verdict == "nominal-improver"


def test_json_has_the_documented_fields(make_table):
    judgement = judge(make_table({"baseline": [0.0, 1.0, 2.0], "a": [5.0], "b": [1.0, 2.0]}), "acc")
    data = json.loads(judgement.to_json())
    for key in ("sigma", "m", "alpha", "correction", "fwer_uncorrected", "arms"):
        assert key in data
    assert data["fwer_uncorrected"] == pytest.approx(1 - 0.95**2)
    for arm in data["arms"]:
        for key in (
            "arm",
            "scale",
            "n_seeds",
            "mean",
            "delta",
            "z",
            "p",
            "p_adj",
            "test",
            "verdict",
        ):
            assert key in arm
    assert data["arms"][0]["t"] is None  # NaN becomes null, so the JSON is valid


def test_mde_is_the_power_formula_in_metric_units(make_table):
    judgement = judge(make_table({"baseline": [0.0, 1.0, 2.0], "a": [5.0], "b": [1.0, 2.0]}), "acc")
    # σ pools the baseline (2 df) and b (1 df); one seed somewhere: the robust test, whose
    # single-seed arm a is bounded by b's upper bound (data) or 6σ, at the calibrated level.
    design = Design(
        arm_seeds=1,
        baseline_seeds=3,
        n_arms=2,
        sigma_dof=3,
        family_test="robust",
        alpha=judgement.level,
        single_bound=judgement.single_seed_bound,
    )
    assert judgement.single_seed_bound >= 6.0
    assert judgement.arm("a").mde == pytest.approx(
        minimum_detectable_effect(design) * judgement.sigma, rel=1e-4
    )
    assert judgement.arm("b").mde != judgement.arm("a").mde
    assert dict(judgement.mdes)[1] == pytest.approx(minimum_detectable_effect(design))


def test_grades_and_tuned_arms():
    table = Table(
        (
            *rows("baseline", [0.5, 0.52, 0.48]),
            *rows("baseline", [0.6, 0.62, 0.58], scale="t"),
            *rows("solid", [0.7, 0.72, 0.71]),
            *rows("solid", [0.8, 0.8, 0.81], scale="t"),
            *rows("solid", [0.3], metric="val_loss"),
            *rows("tuned", [0.7, 0.72, 0.71], tuned=True),
            *rows("tuned", [0.8, 0.8, 0.81], scale="t", tuned=True),
            *rows("tuned", [0.3], metric="val_loss", tuned=True),
            *rows("single", [0.7]),
        )
    )
    judgement = judge(table, "acc", JudgeOptions(scale="s"))
    assert judgement.arm("solid").grade == "A"
    assert judgement.arm("tuned").grade == "B"
    assert judgement.arm("tuned").grade_missing == ("shared recipe",)
    assert judgement.arm("tuned").tuned
    assert set(judgement.arm("single").grade_missing) == {"3+ seeds", "2+ scales"}
    assert judge(table, "acc", JudgeOptions(scale="s", correction="none")).arm("solid").grade == "B"
    assert any("R1" in note for note in judgement.notes)


def test_several_scales_need_a_choice():
    table = Table((*rows("baseline", [0.5, 0.6]), *rows("baseline", [0.5, 0.6], scale="t")))
    with pytest.raises(Exception, match="pick one with --scale"):
        judge(table, "acc")


def test_exclude_leaves_arms_out_of_the_family(make_table):
    values = {"baseline": [0.0, 1.0, 2.0], "other_base": [1.0, 1.5], "a": [5.0]}
    judgement = judge(make_table(values), "acc", JudgeOptions(exclude=["other_base"]))
    assert [v.arm for v in judgement.arms] == ["a"]
    assert judgement.m == 1


def test_paper_mode_and_r6_notes(make_table):
    values = {"baseline": [0.0, 1.0, 2.0], "attn": [5.0]}
    table = make_table(values, metric="val_loss", duties={"attn": ("downstream",)})
    notes = judge(table, "val_loss").notes
    assert not any("UNCALIBRATED" in note for note in notes)
    assert any(note.startswith("R6") and "attn" in note for note in notes)
    paper = judge(table, "val_loss", JudgeOptions(reference="normal"))
    assert any(note.startswith("UNCALIBRATED") for note in paper.notes)
    assert paper.reference == "normal" and not paper.calibrated and paper.test == "z"
