"""The power formula against the noncentral t (exact case) and Monte Carlo (Welch case)."""

import math

import numpy as np
import pytest
from scipy import stats

from archaudit.errors import ConfigError
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.inference.family_test import moderated_welch
from archaudit.stats.simulation.design_rate import design_power
from archaudit.stats.simulation.power import (
    Design,
    minimum_detectable_effect,
    power,
    seeds_needed,
)


@pytest.mark.parametrize("baseline_seeds", [2, 3, 10])
@pytest.mark.parametrize("effect", [0.0, 1.5, 3.0, 6.0])
@pytest.mark.parametrize(("arms", "correction"), [(19, "bonferroni"), (1, "none")])
@pytest.mark.parametrize("reference", ["t", "normal"])
def test_single_seed_power_is_a_noncentral_t_tail(
    baseline_seeds, effect, arms, correction, reference
):
    # Δ ~ N(effect, 1 + 1/k) and σ̂² ~ χ²_{k−1}/(k−1), so Δ/(σ̂·√(1 + 1/k)) is noncentral t
    # with k − 1 degrees of freedom. The calibrated test needs it beyond the t quantile, paper
    # mode needs z = Δ/σ̂ beyond the normal one; both need |Δ| >= 2σ̂.
    level = 0.05 / arms if correction != "none" else 0.05
    scale = math.sqrt(1 + 1 / baseline_seeds)
    df = baseline_seeds - 1
    if reference == "t":
        threshold = max(stats.t.isf(level / 2, df), 2.0 / scale)
    else:
        threshold = max(stats.norm.isf(level / 2), 2.0) / scale
    t = stats.nct(df, effect / scale)
    expected = t.sf(threshold) + t.cdf(-threshold)
    design = Design(
        arm_seeds=1,
        baseline_seeds=baseline_seeds,
        n_arms=arms,
        correction=correction,
        reference=reference,
        family_test="pooled-t" if reference == "t" else None,  # equal variance declared
    )
    assert power(effect, design) == pytest.approx(expected, abs=1e-9)
    if reference == "t":  # the default: the arm's seed σ bounded at 6σ in the threshold only
        bound = math.sqrt(36 + 1 / baseline_seeds)
        threshold = max(stats.t.isf(level / 2, df) * bound, 2.0) / scale
        robust = Design(
            arm_seeds=1, baseline_seeds=baseline_seeds, n_arms=arms, correction=correction
        )
        assert robust.test == "robust"
        assert power(effect, robust) == pytest.approx(t.sf(threshold) + t.cdf(-threshold), abs=1e-9)


def simulated_power(arm_seeds, baseline_seeds, effect, level, arms=5, n=20_000, seed=0):
    """Share of draws the verdict rule calls significant: the moderated Welch p of the first of
    `arms` arms (family_test.moderated_welch: each side's variance shrunk toward the pooled σ²)
    below level and |Δ| >= 2σ̂, the other arms null and pooled into σ̂."""
    rng = np.random.default_rng(seed)
    values = rng.normal(0.0, 1.0, (n, arms, arm_seeds))
    values[:, 0] += effect
    base = rng.normal(0.0, 1.0, (n, baseline_seeds))
    dof = baseline_seeds - 1 + arms * (arm_seeds - 1)
    squares = base.var(axis=1, ddof=1) * (baseline_seeds - 1)
    sigma = np.sqrt((squares + values.var(axis=2, ddof=1).sum(axis=1) * (arm_seeds - 1)) / dof)
    arm = values[:, 0]
    se, df = moderated_welch(
        arm_seeds, baseline_seeds, sigma, dof, arm.var(axis=1, ddof=1), base.var(axis=1, ddof=1)
    )
    delta = arm.mean(axis=1) - base.mean(axis=1)
    p = 2 * stats.t.sf(np.abs(delta) / se, df)
    return np.mean((p < level) & (np.abs(delta) >= 2 * sigma))


@pytest.mark.parametrize(("arm_seeds", "baseline_seeds"), [(2, 2), (3, 3), (5, 5), (3, 8)])
@pytest.mark.parametrize("effect", [0.0, 3.0])
def test_welch_power_matches_simulation(arm_seeds, baseline_seeds, effect):
    design = Design(
        arm_seeds=arm_seeds, baseline_seeds=baseline_seeds, n_arms=5, correction="bonferroni"
    )
    simulated = simulated_power(arm_seeds, baseline_seeds, effect, design.level)
    tolerance = 4 * math.sqrt(max(simulated * (1 - simulated), 1e-4) / 20_000)
    assert power(effect, design) == pytest.approx(simulated, abs=tolerance)


def test_mde_is_where_power_reaches_the_target():
    design = Design(arm_seeds=3, baseline_seeds=3, n_arms=19)
    mde = minimum_detectable_effect(design, 0.8)
    assert power(mde, design) == pytest.approx(0.8, abs=1e-4)
    assert power(0.98 * mde, design) < 0.8
    assert minimum_detectable_effect(Design(arm_seeds=6, baseline_seeds=6, n_arms=19)) < mde


def test_seeds_needed_is_the_smallest_sufficient():
    k = seeds_needed(3.0, n_arms=19)
    assert power(3.0, Design(arm_seeds=k, baseline_seeds=k, n_arms=19)) >= 0.8
    assert power(3.0, Design(arm_seeds=k - 1, baseline_seeds=k - 1, n_arms=19)) < 0.8


def test_effects_under_two_sigma_are_never_detected():
    # |Δ| < 2σ is within noise by rule; as seeds grow, power tends to P(|Δ| >= 2σ) < 1/2.
    assert seeds_needed(1.5, n_arms=19, max_seeds=200) is None
    assert power(1.5, Design(arm_seeds=200, baseline_seeds=200)) < 0.5


def test_one_seed_is_never_enough_for_a_modest_effect_by_default():
    # A big baseline makes σ exact, but one seed cannot show the arm's own spread: bounded at
    # 6σ, 3σ needs more seeds; declared equal variance, one seed would do.
    k = seeds_needed(3.0, JudgeOptions(correction="none"), baseline_seeds=40)
    assert k is not None and k >= 2
    assumed = Design(arm_seeds=1, baseline_seeds=40, correction="none", family_test="pooled-t")
    assert power(3.0, assumed) >= 0.8


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(arm_seeds=0, baseline_seeds=3),
        dict(arm_seeds=1, baseline_seeds=1),
        dict(arm_seeds=1, baseline_seeds=3, alpha=1.5),
        dict(arm_seeds=1, baseline_seeds=3, correction="sidak"),
    ],
)
def test_bad_designs_are_config_errors(kwargs):
    with pytest.raises(ConfigError):
        Design(**kwargs)


def test_stats_power_quotes_the_mde_at_the_calibrated_level():
    """Issue 41.5: 2 arms × 2 seeds against 3 printed 10.33σ, the power formula at α, where the
    measured power is 0.70; the verdicts are judged at α′ and the stats header quotes its MDE."""
    from archaudit.stats import AuditDesign
    from archaudit.stats.simulation.calibrate import design_level
    from archaudit.stats.simulation.design_rate import arm_mde
    from archaudit.stats.simulation.power import Design, minimum_detectable_effect

    options = JudgeOptions()
    result = design_power(2, 2, options, baseline_seeds=3)
    design = AuditDesign.balanced(2, 2, 3, options)
    assert result.level == design_level(design) < options.alpha
    nominal = minimum_detectable_effect(Design.balanced(2, 3, 2, options), options.power_target)
    assert result.mde_sigmas == arm_mde(design, 2) > nominal
