"""Cross-scale transfer and transfer across baselines on tables with planted effects."""

import numpy as np
import pytest
from scipy import stats

from archaudit.stats import cross_scale_transfer, transfer_across_baselines
from archaudit.stats.errors import DesignError
from archaudit.stats.table import Row, Table

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
    result = cross_scale_transfer(ladder(effects), "acc", n_boot=300, seed=1)
    assert (result.small, result.large) == ("d6", "d12")
    assert result.spearman == pytest.approx(1.0)
    assert result.kendall == pytest.approx(1.0)
    assert result.sign_preserved == 1.0
    assert all(arm.rank_shift == 0 for arm in result.arms)
    # Arms 5σ apart keep their order in every replicate: no interval, said so, not [1, 1].
    assert all(np.isnan(result.spearman_interval))
    assert all("not estimable" in note for note in result.notes) and len(result.notes) == 2


def test_reversed_ranking_is_flagged_and_matches_scipy():
    effects = {
        "a": (0.10, -0.20),
        "b": (0.05, 0.01),
        "c": (-0.05, 0.12),
        "d": (-0.10, 0.30),
        "e": (0.02, 0.05),
    }
    result = cross_scale_transfer(ladder(effects), "acc", n_boot=300, seed=1)
    small = [arm.delta_small for arm in result.arms]
    large = [arm.delta_large for arm in result.arms]
    assert result.spearman == pytest.approx(stats.spearmanr(small, large).statistic)
    assert result.kendall == pytest.approx(stats.kendalltau(small, large).statistic)
    assert result.spearman < 0
    assert "is not a ranking at d12" in result.notes[0]
    shifts = {arm.arm: arm.rank_shift for arm in result.arms}
    assert shifts["a"] == 4  # best at d6 (rank 1), worst at d12 (rank 5)
    assert not next(arm for arm in result.arms if arm.arm == "a").sign_preserved


def test_bootstrap_is_reproducible():
    effects = {"a": (0.01, 0.02), "b": (0.0, 0.01), "c": (-0.01, 0.0), "d": (0.02, -0.01)}
    table = ladder(effects)
    first = cross_scale_transfer(table, "acc", n_boot=200, seed=5)
    assert cross_scale_transfer(table, "acc", n_boot=200, seed=5).to_dict() == first.to_dict()
    other = cross_scale_transfer(table, "acc", n_boot=200, seed=6)
    assert other.spearman_interval != first.spearman_interval


def test_arms_that_diverged_only_at_the_larger_scale():
    effects = {"a": (0.1, 0.2), "b": (0.05, 0.1), "c": (-0.05, -0.1), "unstable": (0.2, 0.0)}
    result = cross_scale_transfer(
        ladder(effects, diverged_at_large={"unstable"}), "acc", n_boot=100
    )
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
    from archaudit.stats.table import Row, Table

    means = {"llama": {"baseline": 3.0, "qk_norm": 2.9}, "olmo": {"baseline": 2.0, "qk_norm": 2.2}}
    rows = []
    for base, arms in means.items():
        for arm, mean in arms.items():
            for seed, jitter in enumerate((-0.01, 0.0, 0.01)):
                rows.append(Row(f"{arm}@{base}", "s", seed, "val_loss", mean + jitter))
    result = transfer_across_baselines(
        Table(tuple(rows)), "val_loss", ["llama", "olmo"], lower_is_better=True
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


def test_single_seed_arms_get_an_interval_that_reflects_their_seed_noise():
    """Defect: resampling one seed changes nothing, so the interval used to be [ρ, ρ]."""
    result = cross_scale_transfer(single_seed_ladder(CLOSE), "acc", n_boot=1000, seed=0)
    low, high = result.spearman_interval
    assert low < result.spearman < high
    tau_low, tau_high = result.kendall_interval
    assert tau_low < result.kendall < tau_high
    assert result.parametric_arms == tuple(CLOSE)
    again = cross_scale_transfer(single_seed_ladder(CLOSE), "acc", n_boot=1000, seed=0)
    assert again.to_dict() == result.to_dict()


def test_more_seed_noise_widens_the_single_seed_interval():
    quiet = cross_scale_transfer(single_seed_ladder(CLOSE, NOISE / 4), "acc", n_boot=1000)
    loud = cross_scale_transfer(single_seed_ladder(CLOSE, NOISE * 4), "acc", n_boot=1000)
    width = [r.spearman_interval[1] - r.spearman_interval[0] for r in (quiet, loud)]
    assert width[0] < width[1]


def test_sigma_uncertainty_widens_the_interval_over_a_known_sigma():
    """σ from 2 degrees of freedom is drawn from its scaled-inverse-χ², so arms far apart in σ̂
    units still swap sometimes; the same σ̂ from 29 degrees of freedom swaps them far less."""
    few = cross_scale_transfer(single_seed_ladder(CLOSE, NOISE / 2), "acc", n_boot=2000)
    many_noise = np.resize([-1.0, 1.0], 30) * 0.005 * np.sqrt(29 / 30)
    many = cross_scale_transfer(single_seed_ladder(CLOSE, many_noise), "acc", n_boot=2000)
    width = [r.spearman_interval[1] - r.spearman_interval[0] for r in (few, many)]
    assert width[0] > width[1]


def test_an_interval_with_no_variation_is_not_estimable_never_zero_width():
    rows = []
    for scale in ("d6", "d12"):
        for seed, noise in enumerate(NOISE):
            rows.append(
                Row(arm="baseline", scale=scale, seed=seed, metric="acc", value=0.5 + noise)
            )
            for arm, level in (("a", 0.6), ("b", 0.7), ("c", 0.8)):  # identical seeds per arm
                rows.append(Row(arm=arm, scale=scale, seed=seed, metric="acc", value=level))
    result = cross_scale_transfer(Table(tuple(rows)), "acc", n_boot=200)
    assert result.spearman == pytest.approx(1.0)
    assert all(np.isnan(result.spearman_interval)) and all(np.isnan(result.kendall_interval))
    assert any("Spearman ρ interval not estimable" in note for note in result.notes)
    assert result.to_dict()["spearman_interval"] == [None, None]


def test_a_ranking_of_within_noise_arms_is_not_claimed_to_change():
    """Issue 22: "ρ = −0.63: the ranking at d48 is not a ranking at d64" was said of arms that
    were all within noise. Their order is noise: the note says the ranking is not estimable."""
    effects = {"a": (0.001, -0.001), "b": (-0.001, 0.001), "c": (0.0005, -0.0005)}
    result = cross_scale_transfer(ladder(effects), "acc", n_boot=300, seed=1)
    assert result.spearman < 0.5
    assert {arm.verdict_small for arm in result.arms} == {"within-noise"}
    assert result.notes[0].startswith("ranking not estimable: every arm is within noise")
    assert not any("is not a ranking" in note for note in result.notes)
