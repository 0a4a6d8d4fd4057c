"""Loss–downstream decoupling per arm and per family."""

import numpy as np
import pytest

from archaudit.errors import ConfigError
from archaudit.stats import decoupling, judge
from archaudit.stats.analyses.decoupling import (
    DOWNSTREAM_FLAT,
    FLAT,
    FLAT_SHARE,
    LOSS_FLAT,
    NOT_TESTABLE,
    OPPOSITE,
    Side,
)
from archaudit.stats.records.table import Row, Table

NOISE = (-0.01, 0.0, 0.01)


def audit(
    arms: dict[str, tuple[str, float, float]], loss_noise=NOISE, downstream_noise=NOISE
) -> Table:
    """arm → (family, loss, downstream); the baseline has loss 3.0 and downstream 0.5."""
    rows = []
    for arm, (family, loss, downstream) in {"baseline": ("", 3.0, 0.5), **arms}.items():
        for seed, (loss_jitter, downstream_jitter) in enumerate(
            zip(loss_noise, downstream_noise, strict=True)
        ):
            for metric, value in (
                ("val_loss", loss + loss_jitter),
                ("downstream_avg", downstream + downstream_jitter),
            ):
                rows.append(
                    Row(
                        arm=arm,
                        scale="s",
                        seed=seed,
                        metric=metric,
                        value=value,
                        family=family or None,
                    )
                )
    return Table(tuple(rows))


def test_decoupled_arms_and_family_summary():
    table = audit(
        {
            "softmax_swap": ("attention-output", 3.0, 0.30),  # loss equal: flat; downstream −0.2
            "attn_gate": ("attention-output", 2.99, 0.51),  # both flat: coupled
            "res_scale": ("residual", 2.70, 0.40),  # loss −10 % better, downstream worse
            "res_plain": ("residual", 3.01, 0.50),
        }
    )
    result = decoupling(table)
    by_arm = {arm.arm: arm for arm in result.arms}
    assert by_arm["softmax_swap"].loss_change == pytest.approx(0.0)
    assert by_arm["softmax_swap"].loss_verdict not in ("improver", "regressor")
    assert by_arm["softmax_swap"].loss_flat and not by_arm["softmax_swap"].downstream_flat
    assert by_arm["softmax_swap"].kind == LOSS_FLAT
    assert by_arm["res_scale"].kind == OPPOSITE
    assert by_arm["res_scale"].downstream_change == pytest.approx(-0.2)
    assert not by_arm["attn_gate"].decoupled and not by_arm["res_plain"].decoupled
    families = {family.family: family for family in result.families}
    assert families["attention-output"].n_decoupled == 1
    assert families["attention-output"].share == 0.5
    assert families["residual"].n_arms == 2


def test_a_significant_loss_regression_with_a_downstream_drop_is_coupled():
    """Defect: r_L = +2 % is under the 5 % threshold, but the loss regressed at z = −60 in the
    same direction as the downstream drop; that used to be called "loss flat"."""
    tight = (-0.001, 0.0, 0.001)
    table = audit({"a": ("attention-output", 3.06, 0.30)}, loss_noise=tight)
    loss_z = (3.0 - 3.06) / 0.001
    (arm,) = decoupling(table).arms
    assert loss_z == pytest.approx(-60)
    assert arm.loss_change == pytest.approx(0.02)
    assert (arm.loss_verdict, arm.downstream_verdict) == ("regressor", "regressor")
    assert not arm.decoupled and arm.kind is None


def test_a_margin_cannot_make_a_significant_loss_flat():
    table = audit({"a": ("norm", 3.3, 0.2)})  # loss +10 % worse, downstream worse: agree
    assert not decoupling(table).arms[0].decoupled
    wide = decoupling(table, margin=100.0).arms[0]
    assert not wide.loss_flat and not wide.decoupled


def test_a_loss_within_noise_is_flat_only_when_shown_equivalent_within_the_margin():
    # σ(loss) = 0.3: +0.45 is 1.5 σ (within noise), but its interval reaches past the MDE.
    wide = (-0.3, 0.0, 0.3)
    table = audit({"a": ("norm", 3.45, 0.2)}, loss_noise=wide)
    arm = decoupling(table).arms[0]
    assert arm.loss_verdict == "within-noise" and not arm.loss_flat
    assert arm.loss_margin == pytest.approx(judge(table, "val_loss").arms[0].mde)
    assert not arm.decoupled
    loose = decoupling(table, margin=10.0).arms[0]
    assert loose.loss_margin == pytest.approx(10 * judge(table, "val_loss").sigma)
    # a margin of 3.0 on a loss of 3.0 would call anything flat: not testable, not decoupled
    assert loose.loss_status == NOT_TESTABLE and not loose.loss_flat and loose.kind is None


def test_the_margin_must_be_positive():
    with pytest.raises(ConfigError, match="margin"):
        decoupling(audit({"a": ("norm", 3.0, 0.5)}), margin=0.0)


def test_the_reverse_loss_moved_downstream_flat():
    table = audit({"a": ("norm", 2.5, 0.505)})  # loss 17 % better, downstream 1 %, within noise
    arm = decoupling(table).arms[0]
    assert (arm.loss_verdict, arm.downstream_verdict) == ("improver", "within-noise")
    assert arm.kind == DOWNSTREAM_FLAT


def test_a_noisy_downstream_within_noise_is_not_testable_for_flat():
    """Within noise because the downstream is noisy (σ = 0.1), not because it stayed put: its
    MDE (0.35) is 70% of the baseline's 0.5, so "flat within it" would say nothing. It used to
    be called flat, and the arm "downstream flat, loss moved"."""
    table = audit({"a": ("norm", 2.5, 0.6)}, downstream_noise=(-0.1, 0.0, 0.1))
    arm = decoupling(table).arms[0]
    assert arm.downstream_verdict == "within-noise"
    assert arm.downstream_change == pytest.approx(0.2)
    assert arm.downstream_margin > FLAT_SHARE * 0.5
    assert arm.downstream_status == NOT_TESTABLE and not arm.downstream_flat
    assert not arm.decoupled


def test_flat_needs_a_margin_small_against_the_baselines_value():
    # the case: an MDE of 0.11 against a baseline accuracy of 0.013
    floor = Side(verdict="within-noise", interval=(-0.05, 0.05), margin=0.11, baseline=0.013)
    assert not floor.testable and not floor.flat and floor.status == NOT_TESTABLE
    tight = Side(verdict="within-noise", interval=(-0.05, 0.05), margin=0.09, baseline=0.5)
    assert tight.testable and tight.flat and tight.status == FLAT
    wide = Side(verdict="within-noise", interval=(-0.05, 0.05), margin=0.11, baseline=0.5)
    assert not wide.testable and wide.status == NOT_TESTABLE


def same_gain_audits(count: int, arm_seeds: int, rng: np.random.Generator):
    """Audits of five arms with the same 10σ gain on loss (σ 0.01) and downstream (σ 0.002)
    against a 3-seed baseline: each arm's loss and downstream agree, none is decoupled."""
    for _ in range(count):
        rows = []
        for arm in ("baseline", "a", "b", "c", "d", "e"):
            gain, seeds = (0.0, 3) if arm == "baseline" else (10.0, arm_seeds)
            for seed in range(seeds):
                for metric, level, sigma, sign in (
                    ("val_loss", 3.0, 0.01, -1.0),
                    ("downstream_avg", 0.5, 0.002, 1.0),
                ):
                    value = level + sigma * (rng.normal() + sign * gain)
                    rows.append(Row(arm=arm, scale="s", seed=seed, metric=metric, value=value))
        yield Table(tuple(rows))


@pytest.mark.parametrize("arm_seeds", [1, 2])
def test_arms_with_the_same_gain_on_both_are_rarely_called_decoupled(arm_seeds):
    """Defect: "flat" meant "not significant": a 10σ gain that missed the corrected test on one
    side made the arm decoupled in 33% (2 seeds) and 54% (1 seed) of these audits. Flat now
    means shown equivalent within the margin (TOST against the MDE)."""
    rng = np.random.default_rng(0)
    calls = [
        arm.decoupled
        for table in same_gain_audits(60, arm_seeds, rng)
        for arm in decoupling(table).arms
    ]
    assert np.mean(calls) <= 0.05
