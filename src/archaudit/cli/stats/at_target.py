"""The line `archaudit stats` prints under its verdict table for an audit whose file names a
[target]: each arm's predicted Δ there, rendered from the findings record's `prediction` (`stats
predict` prints the whole prediction)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from archaudit.cli.base.tables import say
from archaudit.formatting import interval, num

if TYPE_CHECKING:
    from archaudit.stats.predictions.predict import Prediction
    from archaudit.stats.records.target import TargetPrediction


def print_at_target(prediction: Prediction | None, metric: str) -> None:
    """Under the verdict table of `metric`: each arm at the target, when the record holds a
    prediction of that metric (why it could not be made is among the record's absent notes)."""
    if prediction is None or prediction.metric != metric:
        return
    head = (
        f"at target {prediction.ladder.target.name} ({prediction.how()}; `stats predict` for "
        "the backtest): "
    )
    _note(head + "; ".join(_at_target(a) for a in prediction.arms))


def _at_target(a: TargetPrediction) -> str:
    if not a.estimable:
        return f"{a.arm} not estimable"
    return f"{a.arm} Δ̂ {num(a.delta)} {interval(a.interval)}, P(sign holds) {a.p_sign_holds:.2f}"


def _note(text: str) -> None:
    say(Console(), f"- {text}", indent="  ")
