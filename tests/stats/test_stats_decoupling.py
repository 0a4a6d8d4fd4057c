"""Loss–downstream decoupling per arm and per family."""

import pytest

from archaudit.stats import decoupling
from archaudit.stats.decoupling import LOSS_FLAT, OPPOSITE
from archaudit.stats.table import Row, Table

NOISE = (-0.01, 0.0, 0.01)


def audit(arms: dict[str, tuple[str, float, float]]) -> Table:
    """arm → (family, loss, downstream); the baseline has loss 3.0 and downstream 0.5."""
    rows = []
    for arm, (family, loss, downstream) in {"baseline": ("", 3.0, 0.5), **arms}.items():
        for seed, noise in enumerate(NOISE):
            for metric, value in (
                ("val_loss", loss + noise),
                ("downstream_avg", downstream + noise),
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
    assert by_arm["softmax_swap"].kind == LOSS_FLAT
    assert by_arm["res_scale"].kind == OPPOSITE
    assert not by_arm["attn_gate"].decoupled and not by_arm["res_plain"].decoupled
    families = {family.family: family for family in result.families}
    assert families["attention-output"].n_decoupled == 1
    assert families["attention-output"].share == 0.5
    assert families["residual"].n_arms == 2


def test_threshold_decides_what_counts_as_flat():
    table = audit({"a": ("norm", 3.3, 0.2)})  # loss +10 % worse, downstream worse: agree
    assert not decoupling(table).arms[0].decoupled
    assert decoupling(table, threshold=0.2).arms[0].kind == LOSS_FLAT


def test_a_non_significant_downstream_change_is_not_decoupling():
    table = audit({"a": ("norm", 2.5, 0.505)})  # loss clearly better, downstream within noise
    arm = decoupling(table).arms[0]
    assert arm.downstream_verdict == "within-noise"
    assert not arm.decoupled
