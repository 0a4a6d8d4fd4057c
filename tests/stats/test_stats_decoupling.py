"""Loss–downstream decoupling per arm and per family."""

import pytest

from archaudit.stats import decoupling
from archaudit.stats.decoupling import DOWNSTREAM_FLAT, LOSS_FLAT, OPPOSITE
from archaudit.stats.table import Row, Table

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
            "softmax_swap": ("attention-output", 3.03, 0.30),  # loss +1 %: flat; downstream −0.2
            "attn_gate": ("attention-output", 2.99, 0.51),  # both flat: coupled
            "res_scale": ("residual", 2.70, 0.40),  # loss −10 % better, downstream worse
            "res_plain": ("residual", 3.01, 0.50),
        }
    )
    result = decoupling(table)
    by_arm = {arm.arm: arm for arm in result.arms}
    assert by_arm["softmax_swap"].loss_change == pytest.approx(0.01)
    assert by_arm["softmax_swap"].loss_verdict not in ("improver", "regressor")
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


def test_a_threshold_cannot_make_a_significant_loss_flat():
    table = audit({"a": ("norm", 3.3, 0.2)})  # loss +10 % worse, downstream worse: agree
    assert not decoupling(table).arms[0].decoupled
    assert not decoupling(table, threshold=0.2).arms[0].decoupled


def test_threshold_decides_what_counts_as_flat_for_a_loss_within_noise():
    # σ(loss) = 0.3: +0.45 is 1.5 σ (within noise) but 15 % of the loss.
    wide = (-0.3, 0.0, 0.3)
    table = audit({"a": ("norm", 3.45, 0.2)}, loss_noise=wide)
    assert decoupling(table).arms[0].loss_verdict == "within-noise"
    assert not decoupling(table).arms[0].decoupled
    assert decoupling(table, threshold=0.2).arms[0].kind == LOSS_FLAT


def test_the_reverse_loss_moved_downstream_flat():
    table = audit({"a": ("norm", 2.5, 0.505)})  # loss 17 % better, downstream 1 %, within noise
    arm = decoupling(table).arms[0]
    assert (arm.loss_verdict, arm.downstream_verdict) == ("improver", "within-noise")
    assert arm.kind == DOWNSTREAM_FLAT


def test_a_downstream_change_within_noise_but_large_is_not_flat():
    """Within noise because the downstream is noisy (σ = 0.1), not because it stayed put: a
    verdict that may only lack power is no evidence of decoupling."""
    table = audit({"a": ("norm", 2.5, 0.6)}, downstream_noise=(-0.1, 0.0, 0.1))
    arm = decoupling(table).arms[0]
    assert arm.downstream_verdict == "within-noise"
    assert arm.downstream_change == pytest.approx(0.2)
    assert not arm.decoupled
