"""`stats predict`: Δ at an untrained target from a ladder of trained scales, with its backtest.

The "not estimable" cases (2 scales, a null audit, intervals wider than the effects, a rejected
curve), the refusal of accuracies, the ladder checks, and known-truth ladders where the curve
must find the truth.
"""

from __future__ import annotations

import math

import pytest
from predict_helpers import PARAMS, TARGET, constant, ladder, log_linear, table

from archaudit.errors import ConfigError
from archaudit.stats.predictions.ladders import Ladder, LadderScale, check_ladder
from archaudit.stats.predictions.predict import predict

STRONG = {
    "good": constant(-0.08),
    "bad": constant(0.06),
    "crossing": log_linear(0.05, -0.03),
    "fading": lambda n: -0.3 * (n / 1e4) ** -0.5,
    "null": constant(0.0),
}


def test_two_scales_are_not_estimable():
    result = predict(table(STRONG, params=PARAMS[:2]), "val_loss", ladder(PARAMS[:2]), n_boot=200)
    assert not result.estimable and "too few scales: 2 trained" in result.reason
    assert all(not a.estimable and math.isnan(a.delta) for a in result.arms)
    assert result.backtest is None


def test_a_null_audit_is_not_estimable():
    nulls = {f"null{i}": constant(0.0) for i in range(5)}
    results = [predict(table(nulls, seed=s), "val_loss", ladder(), n_boot=400) for s in range(8)]
    refused = [r for r in results if not r.estimable]
    assert len(refused) >= 7, [r.reason for r in results]
    assert all("wider than the range of the effects" in r.reason for r in refused)


def test_intervals_wider_than_the_effects_are_not_estimable():
    tiny = {"a": constant(0.002), "b": constant(-0.002), "c": log_linear(0.001, -0.001)}
    result = predict(table(tiny, sigma=0.05, seeds=2), "val_loss", ladder(), n_boot=400)
    assert not result.estimable
    assert "wider than the range of the effects" in result.reason
    assert all(a.reason == result.reason for a in result.arms)


def test_an_arm_whose_curve_is_rejected_is_not_estimable():
    family = {
        "good": constant(-0.08),
        "bad": constant(0.06),
        "null": constant(0.0),
        "crosser": log_linear(0.1, -0.04),  # worse than null at s3, better at s4
        "zigzag": lambda n: 0.2 * (-1) ** round(math.log2(n / 1e4)),
    }
    result = predict(table(family, sigma=0.002), "val_loss", ladder(), n_boot=400)
    arms = {a.arm: a for a in result.arms}
    assert result.model != "single_scale", result.notes
    assert not arms["zigzag"].estimable and "rejected by the χ² test" in arms["zigzag"].reason
    assert all(arms[name].estimable for name in ("good", "bad", "null")), result.arms


def test_known_truth_is_found_and_covered():
    result = predict(table(STRONG, sigma=0.003), "val_loss", ladder(), n_boot=1000)
    assert result.estimable and result.model == "log_linear"
    arms = {a.arm: a for a in result.arms}
    # the truths shift the arm's loss; Δ is baseline − arm (positive = better), as `stats`
    truth = {arm: -f(TARGET.params) for arm, f in STRONG.items()}
    for name in ("good", "bad", "crossing", "null"):  # the log-linear truths
        low, high = arms[name].interval
        assert low <= truth[name] <= high, (name, arms[name], truth[name])
    assert arms["crossing"].delta > arms["good"].delta  # it overtakes "good" by the target
    assert arms["bad"].p_sign_holds > 0.99
    assert arms["bad"].rank == max(a.rank for a in result.arms)  # last of those predicted
    assert result.backtest is not None and result.backtest.scale == "s4"
    assert {b.model for b in result.candidates} == {"constant", "shared_power", "log_linear"}


def test_a_curve_that_does_not_beat_the_baseline_falls_back_to_it():
    flat = {"good": constant(-0.05), "bad": constant(0.05), "ok": constant(-0.02)}
    result = predict(table(flat, sigma=0.001), "val_loss", ladder(), n_boot=400)
    assert result.backtest is not None
    assert result.backtest.decision_accuracy == result.backtest.baseline_decision_accuracy
    assert result.model == "single_scale" and "no curve beat" in " ".join(result.notes)
    for arm in result.arms:  # the Δ̂ at the largest trained scale, with its seed interval
        assert arm.delta == arm.delta_largest
        assert arm.interval[0] < arm.delta < arm.interval[1]


def test_an_accuracy_is_refused_with_the_loss_to_use():
    rows = table(STRONG, metric="val_loss").rows
    from archaudit.stats.table import Row, Table

    both = Table(rows + tuple(Row(r.arm, r.scale, r.seed, "hellaswag_acc", 0.3) for r in rows))
    with pytest.raises(ConfigError, match=r"'hellaswag_acc' is not a loss.*--metric val_loss"):
        predict(both, "hellaswag_acc", ladder())


def test_the_ladder_must_lie_on_one_line_with_the_target_beyond():
    scales = ladder().scales
    off = (*scales[:2], LadderScale("s2", 4e4, 4e4 * 30), *scales[3:])
    with pytest.raises(ConfigError, match=r"scale 's2' trains .*tokens-per-parameter line"):
        check_ladder(Ladder(off, TARGET))
    with pytest.raises(ConfigError, match="no larger than the largest trained scale"):
        check_ladder(Ladder(scales, LadderScale("T", 1e5, 2e6)))
    with pytest.raises(ConfigError, match="target 'T' trains"):
        check_ladder(Ladder(scales, LadderScale("T", 1e6, 1e6)))
    shrinking = (scales[1], scales[0])
    with pytest.raises(ConfigError, match="must have more parameters"):
        check_ladder(Ladder(shrinking, TARGET))


def test_the_same_inputs_give_the_same_prediction():
    one, two = (predict(table(STRONG), "val_loss", ladder(), n_boot=300) for _ in range(2))
    assert one.to_json() == two.to_json()
