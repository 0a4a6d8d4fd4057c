"""Users' own ladders: a results table whose every row also says its scale's parameters and
tokens (a CSV, a Parquet file or a DataFrame of anyone's runs, or a published table such as
DataDecide's), checked as strictly as an audit's ladder.

    arm,scale,seed,metric,value,params,tokens
    baseline,150M,0,val_loss,3.21,1.5e8,3e9

Each scale has one parameter count and one token count (every row of it says the same), they
are positive numbers, and the scales lie on one tokens-per-parameter line with the target
beyond the largest (`ladders.check_ladder`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from archaudit.errors import ArchauditError, ConfigError, DataError
from archaudit.names import RESULTS_FILE
from archaudit.stats.predictions.ladders import Ladder, LadderScale, check_ladder, line_tokens
from archaudit.stats.records.csvio import CsvRow
from archaudit.stats.records.frames import FRAME_SOURCE, is_frame, pandas
from archaudit.stats.records.table import (
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    Table,
    TableLike,
    load_table,
    source_rows,
)


@dataclass(frozen=True)
class RunsLadder:
    """A results table and the scales its size columns place on a ladder."""

    table: Table
    scales: tuple[LadderScale, ...]
    """From the fewest parameters to the most."""

    def to(self, params: float, tokens: float | None = None, name: str = "target") -> Ladder:
        """The ladder to a target of `params` parameters (tokens: on the scales' line when not
        given), checked."""
        if not params > 0:
            raise ConfigError(f"--target {params}: a number of parameters > 0, e.g. 1.2e9")
        target_tokens = line_tokens(self.scales, params) if tokens is None else tokens
        ladder = Ladder(self.scales, LadderScale(name, float(params), float(target_tokens)))
        check_ladder(ladder)
        return ladder


def read_runs_ladder(
    source: TableLike, params_column: str = "params", tokens_column: str = "tokens"
) -> RunsLadder:
    """The table of `source` (a CSV or Parquet path, or a DataFrame) without its size columns,
    and one (parameters, tokens) per scale from them."""
    if params_column == tokens_column:
        raise ConfigError(
            f"--params-column and --tokens-column are both {params_column!r}: name two columns"
        )
    sizes = (params_column, tokens_column)
    rows, name = source_rows(source, RESULTS_FILE, (*REQUIRED_COLUMNS, *sizes), OPTIONAL_COLUMNS)
    try:
        cells = list(rows)
    except ArchauditError as err:
        if "column" not in str(err):
            raise
        raise DataError(
            f"{err} (the sizes are read from the columns {params_column!r} and "
            f"{tokens_column!r}: --params-column and --tokens-column name them)"
        ) from None
    scales = _scales(cells, params_column, tokens_column)
    frame = source if is_frame(source) else pandas().DataFrame([c.cells for c in cells])
    try:
        table = load_table(frame.drop(columns=list(sizes)))
    except ArchauditError as err:  # the rows are numbered as the file's lines: name the file
        raise DataError(str(err).replace(FRAME_SOURCE, name)) from None
    return RunsLadder(table, scales)


def _scales(
    cells: Iterable[CsvRow], params_column: str, tokens_column: str
) -> tuple[LadderScale, ...]:
    """One (parameters, tokens) per scale, in the order of the parameters."""
    seen: dict[str, tuple[float, float, str]] = {}
    for row in cells:
        size = (_positive(row, params_column), _positive(row, tokens_column))
        scale = row.text("scale")
        first = seen.setdefault(scale, (*size, row.where))
        if first[:2] != size:
            raise DataError(
                f"{row.where}: scale {scale!r} has {params_column} = {size[0]:g} and "
                f"{tokens_column} = {size[1]:g}, but {first[2]} gave {first[0]:g} and "
                f"{first[1]:g}: every row of a scale must give its one size"
            )
    ordered = sorted(seen.items(), key=lambda item: item[1][0])
    return tuple(LadderScale(scale, params, tokens) for scale, (params, tokens, _) in ordered)


def _positive(row: CsvRow, column: str) -> float:
    value = row.number(column)
    if not value > 0:
        raise DataError(
            f"{row.where}: column {column!r} must be a number > 0 on every row (got "
            f"{row.cells.get(column, '')!r}); give each scale's {column} on each of its rows"
        )
    return value
