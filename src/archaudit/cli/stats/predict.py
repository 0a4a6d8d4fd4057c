"""`archaudit stats predict`: each arm's Δ at the audit's untrained target scale.

archaudit stats predict AUDIT --metric M [--target PRESET|PARAMS] [--target-tokens D] [--json]
archaudit stats predict RESULTS.csv --target PARAMS (1.2e9, 64M, 1.2B) [--params-column params]
                        [--tokens-column tokens] [--target-tokens D] [--json]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archaudit.cli.base.options import Bootstrap, Flags, judge_flags, output_flags
from archaudit.cli.stats.common import (
    load_table,
    print_notes,
    print_rows,
    printed_json,
    stats_app,
)
from archaudit.formatting import interval
from archaudit.metrics import PRIMARY_LOSS
from archaudit.ranges import Range
from archaudit.stats.choices.options import DEFAULT, LEVEL, JudgeOptions

if TYPE_CHECKING:
    from archaudit.stats import Table
    from archaudit.stats.predictions.ladders import Ladder
    from archaudit.stats.predictions.predict import Prediction
from archaudit.stats.records.target import TargetPrediction

AuditFile = Annotated[
    Path,
    typer.Argument(
        help="The audit file, or its audit folder: its scales and [target] place the ladder; "
        "or a results CSV/Parquet whose rows give their scale's parameters and tokens."
    ),
]
RUNS_SUFFIXES = (".csv", ".parquet")


@dataclass(frozen=True, kw_only=True)
class Aim:
    """What `stats predict` predicts: which metric, at which target, from which columns."""

    metric: str = PRIMARY_LOSS
    """Metric to predict, e.g. val_loss."""
    target: str | None = field(
        default=None, metadata={"range": Range(0, low_open=True), "names": True}
    )
    """A model preset or a parameter count (default: [target])."""
    target_tokens: float | None = field(default=None, metadata={"range": Range(0, low_open=True)})
    """Tokens at the target (default: the ladder's line)."""
    confidence: float = field(default=0.8, metadata={"range": LEVEL})
    """Coverage of the prediction intervals: a level in (0, 1)."""
    params_column: str | None = None
    """A results table's column of parameters."""
    tokens_column: str = "tokens"
    """A results table's column of tokens."""


@stats_app.command("predict")
@output_flags
@judge_flags("baseline", "lower_is_better")
def predict_command(
    audit: AuditFile,
    options: JudgeOptions = DEFAULT,
    *,
    aim: Annotated[Aim, Flags(Aim)],
    bootstrap: Annotated[Bootstrap, Flags(Bootstrap)],
    json_: bool = False,
) -> None:
    """Predict every arm's Δ at the target scale from the trained ladder (>= 3 scales), with a
    prediction interval, P(sign holds) and the predicted rank, beside the backtest of the curve
    and of the single-scale baseline (docs/predict.md)."""
    from archaudit.audit.results.ladder import audit_ladder, parse_target
    from archaudit.audit.setup.spec import load_audit
    from archaudit.stats.predictions.predict import predict

    target, target_tokens = aim.target, aim.target_tokens
    if aim.params_column is not None or audit.suffix in RUNS_SUFFIXES:
        table, ladder = runs_ladder(
            audit, target, target_tokens, aim.params_column, aim.tokens_column
        )
    else:
        spec = load_audit(audit_file_of(audit))
        wanted = parse_target(target, target_tokens) if target is not None else None
        if wanted is None and target_tokens is not None and spec.target is not None:
            wanted = dataclasses.replace(spec.target, tokens=target_tokens, tokens_per_param=None)
        ladder = audit_ladder(spec, wanted, baseline=options.baseline)
        table = load_table(spec.audit_dir)[0]
    result = predict(
        table,
        aim.metric,
        ladder,
        options,
        confidence=aim.confidence,
        n_boot=bootstrap.n_boot,
        seed=bootstrap.seed,
    )
    if printed_json(result, json_):
        return
    _print_prediction(result)


def runs_ladder(
    source: Path,
    target: str | None,
    tokens: float | None,
    params_column: str | None,
    tokens_column: str,
) -> tuple[Table, Ladder]:
    """A results table whose rows give their scale's size, and its ladder to `--target`."""
    from archaudit.errors import ConfigError
    from archaudit.stats.predictions.ladders import parse_size, si_size
    from archaudit.stats.predictions.runs_ladder import read_runs_ladder

    runs = read_runs_ladder(source, params_column or "params", tokens_column)
    params = parse_size(target) if target is not None else None
    if params is None:
        largest = runs.scales[-1].params
        raise ConfigError(
            f"--target {target}: a results table's target is a number of parameters beyond its "
            f"largest scale ({largest:,.0f}), e.g. --target {si_size(largest * 4)} or "
            f"{largest * 4:.3g} (a preset is counted only from an audit file)"
        )
    return runs.table, runs.to(params, tokens, name=str(target))


def audit_file_of(source: Path) -> Path:
    """The audit file itself, or the one an audit folder's audit.json names."""
    from archaudit.audit.grid.store import read_json
    from archaudit.errors import ConfigError
    from archaudit.rundir import AUDIT_FILE

    if not source.is_dir():
        return source
    recorded = (read_json(source / AUDIT_FILE) or {}).get("source")
    if not isinstance(recorded, str) or not Path(recorded).is_file():
        raise ConfigError(
            f"{source}: a folder without a readable audit file behind it (audit.json names "
            f"{recorded!r}); pass the audit file (TOML) itself"
        )
    return Path(recorded)


def _print_prediction(result: Prediction) -> None:
    largest, target = result.ladder.scales[-1], result.ladder.target
    print_rows(
        f"{result.metric} at target {target.name} ({target.params:,.0f} parameters, "
        f"{target.tokens:,.0f} tokens) from {len(result.ladder.scales)} scales "
        f"({largest.name} the largest): {result.brief()}; {result.confidence:.0%} intervals",
        ("arm", f"Δ {largest.name}", "Δ̂ target", "interval", "P(sign holds)", "rank", "could be"),
        [_arm_cells(a) for a in result.arms],
    )
    shown = result.backtests()
    print_notes([test.summary() for test in shown])
    if shown:
        print_notes([models_in_words()])
    print_notes([*((result.reason,) if result.reason else ()), *result.notes])


def models_in_words() -> str:
    """What the backtest lines' and the arms' model names mean."""
    from archaudit.stats.predictions.slope_rule import IN_WORDS

    return MODELS_IN_WORDS.format(rule=IN_WORDS)


MODELS_IN_WORDS = (
    "what the backtest lines name: single_scale, the prediction is Δ̂ at the largest trained "
    "scale; constant, the mean of the arm's Δ̂ over the scales (weighted by their seed noise); "
    "log_linear, the arm's own line of Δ̂ in log N, extended to the target; stacked, a mix of "
    "the three, each weight its share in the mix (chosen to fit the held-out scales best); "
    "slope_rule: {rule}; the intervals are always slope_rule's, and where the stack beats the "
    "single-scale baseline its point is held inside them (docs/predict.md)"
)


def _arm_cells(a: TargetPrediction) -> tuple[object, ...]:
    if not a.estimable:
        return (a.arm, a.delta_largest, "not estimable", "", "", "", "")
    low, high = a.rank_interval
    return (
        a.arm,
        a.delta_largest,
        a.delta,
        interval(a.interval),
        f"{a.p_sign_holds:.2f}",
        a.rank,
        f"{low:.0f}–{high:.0f}",
    )
