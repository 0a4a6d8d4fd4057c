"""Cross-scale transfer and transfer across baselines on tables with planted effects."""

import numpy as np
import pytest
from scipy import stats

from archaudit.stats import cross_scale_transfer, transfer_across_baselines
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.records.errors import DesignError
from archaudit.stats.records.table import Row, Table

NOISE = np.array([-0.01, 0.0, 0.01])


def ladder(effects: dict[str, tuple[float, float]], diverged_at_large=()) -> Table:
    """Baseline plus arms at scales d6 and d12; each arm's effect per scale, 3 seeds each."""
    rows = []
    for arm, per_scale in {"baseline": (0.0, 0.0), **effects}.items():
        for scale, effect in zip(("d6", "d12"), per_scale, strict=True):
            for seed, noise in enumerate(NOISE * (1 + seed_jitter(arm))):
                status = "diverged" if scale == "d12" and arm in diverged_at_large else "ok"
                rows.append(
                    Row(
                        arm=arm,
                        scale=scale,
                        seed=seed,
                        metric="acc",
                        value=0.5 + effect + noise,
                        status=status,
                    )
                )
    return Table(tuple(rows))


def seed_jitter(arm: str) -> float:
    return (sum(map(ord, arm)) % 7) / 10


def test_preserved_ranking():
    effects = {"a": (0.10, 0.20), "b": (0.05, 0.08), "c": (-0.05, -0.02), "d": (-0.10, -0.30)}
    result = cross_scale_transfer(ladder(effects), "acc")
    assert (result.small, result.large) == ("d6", "d12")
    assert result.spearman == pytest.approx(1.0)
    assert result.kendall == pytest.approx(1.0)
    assert result.sign_preserved == 1.0
    assert all(arm.rank_shift == 0 for arm in result.arms)
    # Arms 5σ apart keep their order within the simultaneous intervals: ρ is known to be 1.
    assert result.spearman_interval == result.kendall_interval == (1.0, 1.0)
    assert result.notes == ()


def test_reversed_ranking_is_flagged_and_matches_scipy():
    effects = {
        "a": (0.10, -0.20),
        "b": (0.05, 0.01),
        "c": (-0.05, 0.12),
        "d": (-0.10, 0.30),
        "e": (0.02, 0.05),
    }
    result = cross_scale_transfer(ladder(effects), "acc")
    small = [arm.delta_small for arm in result.arms]
    large = [arm.delta_large for arm in result.arms]
    assert result.spearman == pytest.approx(stats.spearmanr(small, large).statistic)
    assert result.kendall == pytest.approx(stats.kendalltau(small, large).statistic)
    assert result.spearman < 0
    assert "is not a ranking at d12" in result.notes[0]
    shifts = {arm.arm: arm.rank_shift for arm in result.arms}
    assert shifts["a"] == 4  # best at d6 (rank 1), worst at d12 (rank 5)
    assert not next(arm for arm in result.arms if arm.arm == "a").sign_preserved


def test_arms_that_diverged_only_at_the_larger_scale():
    effects = {"a": (0.1, 0.2), "b": (0.05, 0.1), "c": (-0.05, -0.1), "unstable": (0.2, 0.0)}
    result = cross_scale_transfer(ladder(effects, diverged_at_large={"unstable"}), "acc")
    assert result.diverged_only_at_large == ("unstable",)
    assert "unstable" not in [arm.arm for arm in result.arms]


def test_transfer_needs_two_scales_and_three_arms():
    table = ladder({"a": (0.1, 0.2), "b": (0.0, 0.1)})
    with pytest.raises(DesignError, match="at least 3"):
        cross_scale_transfer(table, "acc")
    one_scale = Table(tuple(row for row in table.rows if row.scale == "d6"))
    with pytest.raises(DesignError, match="two scales"):
        cross_scale_transfer(one_scale, "acc")


def test_verdicts_that_flip_between_baselines():
    rows = []
    values = {"base_a": 0.50, "base_b": 0.70, "mid": 0.60, "top": 0.90}
    for arm, level in values.items():
        for seed, noise in enumerate(NOISE):
            rows.append(Row(arm=arm, scale="s", seed=seed, metric="acc", value=level + noise))
    result = transfer_across_baselines(Table(tuple(rows)), "acc", ["base_a", "base_b"])
    by_arm = {arm.arm: arm for arm in result.arms}
    assert set(by_arm) == {"mid", "top"}  # neither baseline is judged against the other
    assert by_arm["mid"].deltas == pytest.approx({"base_a": 0.10, "base_b": -0.10})
    assert not by_arm["mid"].sign_agrees and by_arm["mid"].verdict_flips
    assert by_arm["top"].sign_agrees
    assert result.flipped == ("mid",)
    assert result.sign_agreement == 0.5


def test_transfer_across_baselines_pairs_audit_style_arm_at_baseline_names():
    """An audit applies each arm to each baseline (`qk_norm@llama`, `qk_norm@olmo`): each is
    judged against its own baseline, and the deltas are the per-baseline differences."""
    from archaudit.stats import transfer_across_baselines
    from archaudit.stats.records.table import Row, Table

    means = {"llama": {"baseline": 3.0, "qk_norm": 2.9}, "olmo": {"baseline": 2.0, "qk_norm": 2.2}}
    rows = []
    for base, arms in means.items():
        for arm, mean in arms.items():
            for seed, jitter in enumerate((-0.01, 0.0, 0.01)):
                rows.append(Row(f"{arm}@{base}", "s", seed, "val_loss", mean + jitter))
    result = transfer_across_baselines(
        Table(tuple(rows)), "val_loss", ["llama", "olmo"], JudgeOptions(lower_is_better=True)
    )
    (arm,) = result.arms
    assert arm.arm == "qk_norm"
    assert arm.deltas["llama"] == pytest.approx(0.1) and arm.deltas["olmo"] == pytest.approx(-0.2)
    assert not arm.sign_agrees and result.sign_agreement == 0.0


def single_seed_ladder(effects: dict[str, tuple[float, float]], baseline_noise=NOISE) -> Table:
    """A 3-seed baseline and single-seed arms at d6 and d12 (the published design)."""
    rows = []
    for scale in ("d6", "d12"):
        for seed, noise in enumerate(baseline_noise):
            rows.append(
                Row(arm="baseline", scale=scale, seed=seed, metric="acc", value=0.5 + noise)
            )
        for arm, per_scale in effects.items():
            value = 0.5 + per_scale[scale == "d12"]
            rows.append(Row(arm=arm, scale=scale, seed=0, metric="acc", value=value))
    return Table(tuple(rows))


CLOSE = {
    "a": (0.03, 0.02),
    "b": (0.01, 0.025),
    "c": (-0.01, -0.02),
    "d": (-0.02, 0.0),
    "e": (0.0, -0.01),
}


def test_single_seed_arms_with_sigma_from_few_seeds_give_no_ranking():
    """Defect: resampling one seed changes nothing, so the interval used to be [ρ, ρ]. With σ
    from the baseline's 2 degrees of freedom, arms 1–2σ apart are not ranked at all."""
    result = cross_scale_transfer(single_seed_ladder(CLOSE), "acc")
    assert all(np.isnan(result.spearman_interval)) and all(np.isnan(result.kendall_interval))
    assert "not estimable" in result.notes[0]


def test_more_seed_noise_widens_the_interval():
    far = {arm: (5 * small, 5 * large) for arm, (small, large) in CLOSE.items()}
    quiet = cross_scale_transfer(single_seed_ladder(far, NOISE / 8), "acc")
    loud = cross_scale_transfer(single_seed_ladder(far, NOISE / 2), "acc")
    width = [r.kendall_interval[1] - r.kendall_interval[0] for r in (quiet, loud)]
    assert width[0] < width[1]


def test_sigma_from_more_degrees_of_freedom_narrows_the_interval():
    """The same σ̂ from 29 degrees of freedom has a smaller t quantile than from 2."""
    far = {arm: (5 * small, 5 * large) for arm, (small, large) in CLOSE.items()}
    few = cross_scale_transfer(single_seed_ladder(far, NOISE / 4), "acc")
    many_noise = np.resize([-1.0, 1.0], 30) * 0.0025 * np.sqrt(29 / 30)
    many = cross_scale_transfer(single_seed_ladder(far, many_noise), "acc")
    widths = [r.kendall_interval[1] - r.kendall_interval[0] for r in (few, many)]
    assert widths[0] > widths[1]


def test_rank_correlation_bounds_hold_every_ranking_the_intervals_allow():
    """Brute force over vectors drawn inside random intervals: ρ and τ stay within the bounds
    (the Spearman bound uses Daniels' inequality |3τ − 2ρ| <= 1 as well as the rank ranges)."""
    from archaudit.stats.analyses.ranking import (
        interval_order,
        kendall_bounds,
        kendall_tau_b,
        spearman,
        spearman_bounds,
    )

    rng = np.random.default_rng(0)
    for _ in range(100):
        centre = rng.normal(size=(2, 6)) * 3
        low, high = centre - 1, centre + 1
        orders = [interval_order(low[i], high[i]) for i in range(2)]
        rho_bounds, tau_bounds = spearman_bounds(*orders), kendall_bounds(*orders)
        for _ in range(20):
            x, y = rng.uniform(low, high)
            assert rho_bounds[0] - 1e-9 <= spearman(x, y) <= rho_bounds[1] + 1e-9
            assert tau_bounds[0] - 1e-9 <= kendall_tau_b(x, y) <= tau_bounds[1] + 1e-9
