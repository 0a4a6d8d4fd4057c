"""Verdicts that hold: the default tests keep the family-wise error at α in the designs audits
use, paper mode does not, and the power formula is the simulated power (must-shows 1 and 2)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from archaudit.stats import AuditDesign, JudgeOptions, design_rate, simulate_null
from archaudit.stats.simulation.power import power

AUDITS = 2000
"""Null audits per design: a Monte-Carlo standard error of 0.0049 at a rate of 0.05."""
MC_LIMIT = 0.05 + 2 * math.sqrt(0.05 * 0.95 / AUDITS)

PUBLISHED = AuditDesign(arm_seeds=(1,) * 19, baseline_seeds=3)
"""The 2026 audit: 19 single-seed arms against a 3-seed baseline."""
DESIGNS = {
    "published": PUBLISHED,
    "three seeds per arm": AuditDesign(arm_seeds=(3,) * 19, baseline_seeds=3),
    "mixed": AuditDesign(arm_seeds=(1,) * 10 + (2,) * 5 + (3,) * 4, baseline_seeds=3),
    "anchors": AuditDesign(arm_seeds=(1,) * 12, baseline_seeds=3, anchor_seeds=(3, 3)),
    "demo": AuditDesign(arm_seeds=(2,) * 4, baseline_seeds=3, equal_variance=True),
    "published, dunnett": AuditDesign((1,) * 19, 3, correction="dunnett"),
    "published, bonferroni": AuditDesign((1,) * 19, 3, correction="bonferroni"),
}


@pytest.mark.parametrize("name", DESIGNS)
def test_default_tests_hold_the_family_wise_error_rate(name):
    result = simulate_null(design=DESIGNS[name], audits=AUDITS, seed=11)
    assert result.calibrated
    assert result.fwer <= MC_LIMIT, f"{name}: {result.fwer:.4f}"


def test_paper_mode_in_the_published_design_flags_half_of_null_audits():
    paper = AuditDesign((1,) * 19, 3, reference="normal")
    result = simulate_null(design=paper, audits=AUDITS, seed=11)
    assert result.test == "z" and not result.calibrated
    # PROTOCOL.md: ≈ 0.47 of null audits, per-arm size ≈ 0.12 instead of α/m ≈ 0.0026.
    assert result.fwer == pytest.approx(0.47, abs=3 * result.fwer_se)
    assert result.per_arm_rate == pytest.approx(0.12, abs=0.01)
    assert design_rate(paper).above_alpha
    assert not design_rate(PUBLISHED).above_alpha


def test_the_prediction_t_is_exact_per_arm():
    # Under the null (equal variances, as assumed) a single-seed arm's prediction t has exactly
    # the t distribution with the noise floor's df, so its raw size is α; the z-test's is several
    # times larger; the default (σ bounded at 6×) is far below α.
    uncorrected = JudgeOptions(correction="none")

    def one_arm(options: JudgeOptions):
        return simulate_null(AuditDesign.balanced(1, 1, 3, options), audits=4000, seed=12)

    calibrated = one_arm(uncorrected.but(equal_variance=True))
    assert calibrated.fwer_uncorrected == pytest.approx(0.05, abs=3 * math.sqrt(0.05 * 0.95 / 4000))
    assert one_arm(uncorrected).fwer_uncorrected < 0.01
    paper = one_arm(uncorrected.but(reference="normal"))
    assert paper.fwer_uncorrected > 0.15


def noncentral_t_power(effect: float, design: AuditDesign) -> float:
    """Analytic power of the pooled-σ t for one arm (Bonferroni level), from scipy's nct."""
    n = design.arm_seeds[0]
    a = math.sqrt(1 / n + 1 / design.baseline_seeds)
    threshold = max(stats.t.isf(design.alpha / design.m / 2, design.sigma_dof), 2 / a)
    # P(T' >= c) + P(T' <= −c), the lower tail as an upper one (scipy's far-tail cdf is NaN).
    df, noncentrality = design.sigma_dof, effect / a
    return stats.nct.sf(threshold, df, noncentrality) + stats.nct.sf(threshold, df, -noncentrality)


@pytest.mark.parametrize("effect", [5.0, 10.0])
@pytest.mark.parametrize(
    "design",
    [
        AuditDesign((1,) * 19, 3, correction="bonferroni", equal_variance=True),  # 0.05, 0.18
        AuditDesign((1,) * 19, 5, correction="bonferroni", equal_variance=True),  # 0.26, 0.87
    ],
)
def test_planted_effects_are_found_at_the_noncentral_t_power(design, effect):
    result = simulate_null(design=design, audits=4000, effect=effect, effect_arms=1, seed=13)
    analytic = noncentral_t_power(effect, design)
    assert 0.04 < analytic < 0.99  # a power the comparison can see
    assert result.found_rate == pytest.approx(analytic, abs=0.03)
    assert power(effect, design.arm(design.arm_seeds[0])) == pytest.approx(analytic, abs=1e-9)
