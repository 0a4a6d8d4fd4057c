"""One default for the direction of a metric: None reads it from the name, in every analysis.

Defect: `cross_scale_transfer`, `transfer_across_baselines`, `interactions` and `aggregate`
defaulted to `lower_is_better=False`, so on a loss they called the lower-loss arm a regressor,
while `judge` read the direction from the name.
"""

import pytest

from archaudit.stats import (
    cross_scale_transfer,
    interactions,
    judge,
    resolve_direction,
    transfer_across_baselines,
)
from archaudit.stats.aggregate import aggregate
from archaudit.stats.table import Row, Table

NOISE = (-0.01, 0.0, 0.01)


def losses(means: dict[str, float], metrics=("val_loss",), scales=("s",)) -> Table:
    """Three seeds per arm; `means` in loss units (lower is better)."""
    return Table(
        tuple(
            Row(arm=arm, scale=scale, seed=seed, metric=metric, value=mean + jitter * (1 + i))
            for arm, mean in means.items()
            for scale in scales
            for i, metric in enumerate(metrics)
            for seed, jitter in enumerate(NOISE)
        )
    )


BETTER = {"baseline": 3.0, "a": 2.8, "b": 2.9, "c": 2.7}
"""Every arm has a lower loss than the baseline: better."""


def test_the_direction_comes_from_the_name_unless_given():
    assert resolve_direction("val_loss", None) is True
    assert resolve_direction("downstream_avg", None) is False
    assert resolve_direction("val_loss", False) is False


def test_judge_on_a_loss_without_direction():
    assert all(v.delta > 0 for v in judge(losses(BETTER), "val_loss").arms)


def test_cross_scale_transfer_on_a_loss_without_direction():
    result = cross_scale_transfer(losses(BETTER, scales=("d6", "d12")), "val_loss")
    assert all(arm.delta_small > 0 and arm.delta_large > 0 for arm in result.arms)
    assert {arm.verdict_small for arm in result.arms} == {"improver"}


def test_transfer_across_baselines_on_a_loss_without_direction():
    table = losses({**BETTER, "other": 3.0})
    result = transfer_across_baselines(table, "val_loss", ["baseline", "other"])
    assert all(d > 0 for arm in result.arms for d in arm.deltas.values())


def test_interactions_on_a_loss_without_direction():
    table = losses({"baseline": 3.0, "qk": 2.9, "gqa": 2.8, "qk+gqa": 2.7})
    result = interactions(table, "val_loss")
    assert result.main_effects["qk"] > 0 and result.main_effects["gqa"] > 0
    assert result.harmful == ()


def test_aggregate_on_loss_tasks_without_direction():
    table = losses(BETTER, metrics=("a/nll", "b/nll"))
    result = aggregate(table, metrics=("a/nll", "b/nll"), n_boot=50)
    assert result.lower_is_better is True
    assert all(arm.prob_improvement > 0.5 for arm in result.arms if arm.arm != "baseline")


def test_aggregate_refuses_tasks_that_mix_directions():
    from archaudit.errors import ConfigError

    table = losses(BETTER, metrics=("a/nll", "b/score"))
    with pytest.raises(ConfigError, match="lower_is_better"):
        aggregate(table, metrics=("a/nll", "b/score"), n_boot=50)
