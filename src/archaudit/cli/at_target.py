"""The line `archaudit stats` prints under its verdict table for an audit whose file names a
[target]: each arm's predicted Δ there (`stats predict` prints the whole prediction)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from archaudit.formatting import interval, num

if TYPE_CHECKING:
    from archaudit.stats import Table
    from archaudit.stats.predictions.target import TargetPrediction


def print_at_target(source: Path, table: Table, metric: str, baseline: str) -> None:
    """Under the verdict table of an audit whose file names a [target]: each arm there."""
    from archaudit.audit.ladder import target_prediction
    from archaudit.errors import ArchauditError

    try:
        p = target_prediction(source, source if source.is_dir() else None, table, (metric,),
                              baseline)  # fmt: skip
    except ArchauditError as err:
        _note(f"at the target: not computed ({err})")
        return
    if p is None:
        return
    head = f"at target {p.ladder.target.name} ({p.how()}; `stats predict` for the backtest): "
    _note(head + "; ".join(_at_target(a) for a in p.arms))


def _at_target(a: TargetPrediction) -> str:
    if not a.estimable:
        return f"{a.arm} not estimable"
    return f"{a.arm} Δ̂ {num(a.delta)} {interval(a.interval)}, P(sign holds) {a.p_sign_holds:.2f}"


def _note(text: str) -> None:
    Console(highlight=False).print(f"- {text}")
