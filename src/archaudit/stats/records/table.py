"""The tidy long-format results table every analysis in `archaudit.stats` reads.

One row per (arm, scale, seed, metric). A CSV has the columns

    arm,scale,seed,metric,value[,family,status,step,tuned,duties]

`value` is a finite number, or empty when the run has not (yet) produced that metric: an empty
value makes the arm `incomplete`, never a silent zero. `status` is `ok` (default) or `diverged`
(the run blew up; `step` says when). `family` groups arms (attention-output, residual, norm, ...)
and `tuned` (true/false, default false) marks an arm that broke the shared recipe. `duties`
lists the arm's protocol duties (`downstream` for R6, `cross_scale` for R7, joined by ";"). The
audit writes them as the modification registry decides them, and the analyses read them here,
never from the family's name. All three are properties of the arm and must agree on all of its
rows.

An audit writes `<audit_dir>/results.csv` in exactly this format, for its users (`to_csv`):
`load_table(audit_dir)` reads that export. The tool itself builds an audit's table from the runs'
DONE records (`archaudit.audit.grid.store.read_results`), so no arm property travels as a string.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any

from archaudit.errors import did_you_mean
from archaudit.names import RESULTS_FILE, ResultStatus
from archaudit.stats.records.csvio import MAX_MAGNITUDE, CsvRow, csv_text, read_rows, resolve_source
from archaudit.stats.records.errors import (
    BadValueError,
    DuplicateRowError,
    InconsistentArmError,
    TableError,
    UnknownNameError,
    check_name,
)
from archaudit.stats.records.frames import (
    FRAME_SOURCE,
    cell_text,
    declared_frame,
    frame_rows,
    is_frame,
    read_parquet,
)

REQUIRED_COLUMNS = ("arm", "scale", "seed", "metric", "value")
OPTIONAL_COLUMNS = ("family", "status", "step", "tuned", "duties")
RESULT_COLUMNS = (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS)
SIZE_COLUMNS = ("params", "tokens")
"""A ladder's sizes per row, as `stats predict` reads them (`--params-column`): accepted in a
results table and ignored there, so one CSV of anyone's runs serves every `stats` command."""
RESULT_DTYPES = {
    "arm": "string", "scale": "string", "seed": "Int64", "metric": "string", "value": "float64",
    "family": "string", "status": "string", "step": "Int64", "tuned": "boolean",
    "duties": "string",
}  # fmt: skip
"""Each column's pandas dtype in `Table.to_frame` (and so in results.parquet): as the CSV
reads it, typed also when empty; value stays float64, where NaN is a value (a diverged run)."""


class Duty(StrEnum):
    """A protocol duty an arm owes (R6 downstream evaluation, R4 a second scale)."""

    DOWNSTREAM = "downstream"
    CROSS_SCALE = "cross_scale"


DOWNSTREAM, CROSS_SCALE = DUTIES = tuple(Duty)
"""The protocol duties an arm can owe: downstream evaluation (R6), a second scale (R7)."""
DUTY_SEPARATOR = ";"

_SCALE_NUMBER = re.compile(r"(\d+(?:\.\d+)?)\s*([kmbt]?)", re.IGNORECASE)
_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


TableLike = Any
"""What every analysis reads: a `Table`, a results CSV or Parquet file, an audit directory, or
a pandas DataFrame in the long shape (each goes through `load_table`)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One measurement of one metric for one run (arm, scale, seed)."""

    arm: str
    scale: str
    seed: int
    metric: str
    value: float
    """NaN when the metric was not measured."""
    status: str = ResultStatus.OK
    step: int | None = None
    family: str | None = None
    tuned: bool = False
    duties: tuple[str, ...] = ()
    """The arm's protocol duties, in `DUTIES` order."""
    line: int = 0
    """1-based line in the source file (the header is line 1); 0 for rows built in code."""
    origin: str = ""
    """The file the row was read from when it is not the table's source (a run's DONE)."""

    def cells(self) -> dict[str, Any]:
        """The row by `RESULT_COLUMNS`, duties joined as the `duties` column holds them."""
        cells = {column: getattr(self, column) for column in RESULT_COLUMNS}
        return cells | {"duties": DUTY_SEPARATOR.join(self.duties)}


@dataclass(frozen=True, slots=True)
class Run:
    """One training run as the table sees it: diverged when any of its rows says so."""

    seed: int
    diverged: bool
    step: int | None
    where: str
    """Where its first row (its first diverged row, once it diverged) came from."""


@dataclass(frozen=True)
class Table:
    """Validated rows plus the look-ups the analyses need. Build with `load_table` or directly."""

    rows: tuple[Row, ...]
    source: str = "<table>"

    def __post_init__(self) -> None:
        _check_rows(self)
        _check_arm_properties(self)

    def to_frame(self) -> Any:
        """The rows as a long pandas DataFrame (NaN where a value was not measured)."""
        return declared_frame([row.cells() for row in self.rows], RESULT_DTYPES)

    def to_csv(self) -> str:
        """The rows as a results CSV (numbers exact, empty where not measured), which
        `load_table` reads back row for row."""
        cells = ([cell_text(cell) for cell in row.cells().values()] for row in self.rows)
        return csv_text(RESULT_COLUMNS, cells)

    def where(self, row: Row) -> str:
        """Where a row came from, for error messages: "file:line", or its own file."""
        if row.origin:
            return row.origin
        return f"{self.source}:{row.line}" if row.line else self.source

    @cached_property
    def arms(self) -> tuple[str, ...]:
        """Arms in order of first appearance."""
        return tuple(dict.fromkeys(row.arm for row in self.rows))

    @cached_property
    def metrics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(row.metric for row in self.rows))

    @cached_property
    def scales(self) -> tuple[str, ...]:
        """Scales from small to large (see `order_scales`)."""
        return order_scales(dict.fromkeys(row.scale for row in self.rows))

    @cached_property
    def _by_metric(self) -> dict[tuple[str, str, str], list[Row]]:
        index: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
        for row in self.rows:
            index[(row.metric, row.scale, row.arm)].append(row)
        return index

    @cached_property
    def _runs(self) -> dict[tuple[str, str], dict[int, Run]]:
        runs: dict[tuple[str, str], dict[int, Run]] = defaultdict(dict)
        for row in self.rows:
            seen = runs[(row.arm, row.scale)].get(row.seed)
            if seen is None or (row.status == ResultStatus.DIVERGED and not seen.diverged):
                runs[(row.arm, row.scale)][row.seed] = Run(
                    row.seed, row.status == ResultStatus.DIVERGED, row.step, self.where(row)
                )
        return runs

    @cached_property
    def _by_arm(self) -> dict[str, list[Row]]:
        index: dict[str, list[Row]] = defaultdict(list)
        for row in self.rows:
            index[row.arm].append(row)
        return index

    def rows_of(self, arm: str) -> list[Row]:
        """Every row of one arm, all scales and metrics."""
        return self._by_arm.get(arm, [])

    def rows_for(self, metric: str, scale: str, arm: str) -> list[Row]:
        """The rows of one arm's metric at one scale, one per seed (may be empty)."""
        return self._by_metric.get((metric, scale, arm), [])

    def runs(self, arm: str, scale: str) -> dict[int, Run]:
        """Every run (seed) of an arm at a scale that has any row, whatever its metric."""
        return self._runs.get((arm, scale), {})

    def arms_at(self, scale: str) -> tuple[str, ...]:
        return tuple(arm for arm in self.arms if (arm, scale) in self._runs)

    def family(self, arm: str) -> str | None:
        return self._by_arm[arm][0].family

    def tuned(self, arm: str) -> bool:
        return self._by_arm[arm][0].tuned

    def owes(self, arm: str, duty: str) -> bool:
        """Whether the arm owes a protocol duty (one of `DUTIES`) as its `duties` cells say."""
        return duty in self._by_arm[arm][0].duties

    def check_arm(self, arm: str, role: str = "arm") -> str:
        """Return `arm` if the table has it, else raise naming the closest arm."""
        return check_name(self.source, "arm", role, arm, self.arms)

    def restricted(
        self,
        arms: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
        keep: Sequence[str] = (),
    ) -> Table:
        """The table of one family: only `arms` (all when None), less `exclude`, plus `keep`
        (the baselines and anchors an analysis needs)."""
        for arm in (*(arms or ()), *exclude, *keep):
            self.check_arm(arm, "excluded arm" if arm in exclude else "arm")
        chosen = set(self.arms if arms is None else arms) - set(exclude) | set(keep)
        return Table(tuple(row for row in self.rows if row.arm in chosen), self.source)

    def check_metric(self, metric: str) -> str:
        return check_name(self.source, "metric", "metric", metric, self.metrics)

    def resolve_scale(self, scale: str | None) -> str:
        """The scale to judge: the one given, or the only one in the table."""
        if scale is not None:
            return check_name(self.source, "scale", "scale", scale, self.scales)
        if len(self.scales) > 1:
            raise UnknownNameError(
                f"{self.source} (column 'scale')",
                f"the table has {len(self.scales)} scales ({', '.join(self.scales)})",
                "pick one with --scale",
            )
        return self.scales[0]


def load_table(source: str | Path | Any) -> Table:
    """Read a long-format results CSV or Parquet file, `<audit_dir>/results.csv` when given a
    directory, or a pandas DataFrame with the same columns (checked the same way)."""
    if isinstance(source, Table):
        return source
    optional = (*OPTIONAL_COLUMNS, *SIZE_COLUMNS)
    cells, name = source_rows(source, RESULTS_FILE, REQUIRED_COLUMNS, optional)
    rows = tuple(
        Row(
            arm=cells.text("arm"),
            scale=cells.text("scale"),
            seed=cells.integer("seed"),
            metric=cells.text("metric"),
            value=cells.number("value"),
            status=cells.choice("status", [s.value for s in ResultStatus], default=ResultStatus.OK),
            step=cells.optional_integer("step"),
            family=cells.optional_text("family"),
            tuned=cells.boolean("tuned"),
            duties=read_duties(cells),
            line=cells.line,
        )
        for cells in cells
    )
    return Table(rows, source=name)


def source_rows(
    source: str | Path | Any, filename: str, required: Sequence[str], optional: Sequence[str]
) -> tuple[Iterator[CsvRow], str]:
    """The checked rows of a DataFrame, a Parquet file, a CSV, or `source/filename`."""
    if is_frame(source):
        return frame_rows(source, required, optional), FRAME_SOURCE
    path = resolve_source(
        source,
        filename,
        "the audit store writes it as runs finish; or pass a CSV with the columns "
        + ",".join(required),
    )
    if path.suffix == ".parquet":
        return frame_rows(read_parquet(path), required, optional, str(path)), str(path)
    return read_rows(path, required, optional), str(path)


def read_duties(cells: CsvRow) -> tuple[str, ...]:
    """The `duties` cell as names from `DUTIES` (empty or absent: none)."""
    text = cells.optional_text("duties") or ""
    return check_duties([name.strip() for name in text.split(DUTY_SEPARATOR)], cells.where)


def check_duties(names: Sequence[str], where: str) -> tuple[str, ...]:
    """Duty names (blanks skipped) in `DUTIES` order; an unknown one raises naming `where`."""
    for name in filter(None, names):
        if name not in DUTIES:
            raise BadValueError(
                where,
                f"column 'duties' names an unknown duty {name!r}",
                f"use names from {', '.join(DUTIES)} joined by {DUTY_SEPARATOR!r}"
                + did_you_mean(name, DUTIES),
            )
    return tuple(duty for duty in DUTIES if duty in names)


def order_scales(scales: dict[str, None] | tuple[str, ...]) -> tuple[str, ...]:
    """Small to large: by the number in the name ("d6" < "d12", "125M" < "1.2B"); names without a
    number keep their order of appearance, after the numbered ones."""

    def key(item: tuple[int, str]) -> tuple[int, float]:
        index, scale = item
        match = _SCALE_NUMBER.search(scale)
        if match is None:
            return (1, float(index))
        return (0, float(match.group(1)) * _SUFFIX[match.group(2).lower()])

    return tuple(scale for _, scale in sorted(enumerate(scales), key=key))


def _check_rows(table: Table) -> None:
    seen: dict[tuple[str, str, int, str], Row] = {}
    for row in table.rows:
        if not math.isfinite(row.value) and not math.isnan(row.value):
            raise TableError(
                table.where(row),
                f"value {row.value} is not finite",
                "leave it empty for a missing value",
            )
        if abs(row.value) > MAX_MAGNITUDE:
            raise TableError(
                table.where(row),
                f"value {row.value:g} is beyond ±{MAX_MAGNITUDE:g}",
                "no metric is this large: a unit or export mistake (the statistics would "
                "overflow to inf)",
            )
        key = (row.arm, row.scale, row.seed, row.metric)
        first = seen.setdefault(key, row)
        if first is not row:
            raise DuplicateRowError(
                table.where(row),
                f"duplicate row for arm={row.arm!r} scale={row.scale!r} seed={row.seed} "
                f"metric={row.metric!r} (first at {table.where(first)})",
                "keep one row per (arm, scale, seed, metric)",
            )


def _check_arm_properties(table: Table) -> None:
    for row in table.rows:
        ref = table.rows_of(row.arm)[0]
        for column in ("family", "tuned", "duties"):
            if getattr(row, column) != getattr(ref, column):
                raise InconsistentArmError(
                    table.where(row),
                    f"arm {row.arm!r} has {column}={getattr(row, column)!r} here but "
                    f"{getattr(ref, column)!r} at {table.where(ref)}",
                    f"give every row of an arm the same {column}",
                )
