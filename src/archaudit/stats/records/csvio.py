"""Strict CSV reading shared by the results table and the items table.

Every problem becomes a `TableError` that names the file, the 1-based line (the header is line
1), the column, the bad value and what would be right. Blank lines are skipped.

Writing: a text cell that a spreadsheet would run as a formula (it starts with = + - @, a tab or
a carriage return) gets a leading apostrophe, as OWASP advises against CSV injection; numbers
(`-0.5`) are left as they are, and the reader takes the apostrophe off again.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from archaudit.errors import did_you_mean, did_you_mean_path
from archaudit.files import open_regular
from archaudit.stats.records.errors import (
    BadValueError,
    EmptyTableError,
    MissingColumnError,
    TableError,
    UnknownColumnError,
)

MAX_MAGNITUDE = 1e100
"""Larger values are refused: their squares (variances, sums of squares) overflow to inf and a
σ = inf would judge every arm "within noise"."""
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no", ""})


@dataclass(frozen=True, slots=True)
class CsvRow:
    """One data row: its file, its line and its cells by column name (whitespace stripped)."""

    path: str
    line: int
    cells: dict[str, str]

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def _bad(self, column: str, problem: str, fix: str) -> BadValueError:
        value = self.cells.get(column, "")
        return BadValueError(self.where, f"column {column!r} {problem} (got {value!r})", fix)

    def text(self, column: str) -> str:
        """A required non-empty string."""
        value = self.cells.get(column, "")
        if not value:
            raise self._bad(column, "is empty", "every row needs a value here")
        return value

    def number(self, column: str) -> float:
        """A finite float; an empty cell means "not measured" and reads as NaN."""
        value = self.cells.get(column, "")
        if not value:
            return math.nan
        try:
            if "_" in value:  # float() reads Python's `1_000`; no CSV writer means that
                raise ValueError(value)
            number = float(value)
        except ValueError:
            raise self._bad(column, "is not a number", "write a plain number") from None
        if not math.isfinite(number):
            raise self._bad(
                column,
                "is not finite",
                "leave the cell empty for a missing value, and mark a "
                "run that blew up with status=diverged",
            )
        if abs(number) > MAX_MAGNITUDE:
            raise self._bad(
                column,
                f"is beyond ±{MAX_MAGNITUDE:g}",
                "no metric is this large: a unit or export mistake; the statistics would "
                "overflow to inf (write the value in sensible units)",
            )
        return number

    def optional_text(self, column: str) -> str | None:
        """A string, or None when the cell is empty or the column absent."""
        return self.cells.get(column) or None

    def integer(self, column: str) -> int:
        """A required non-negative whole number."""
        value = self.cells.get(column, "")
        if not (value.isascii() and value.isdigit()) or len(value) > 18:
            raise self._bad(column, "is not a whole number >= 0", "write e.g. 0, 1, 2")
        return int(value)

    def optional_integer(self, column: str) -> int | None:
        """A non-negative whole number, or None when the cell is empty."""
        return self.integer(column) if self.cells.get(column) else None

    def boolean(self, column: str) -> bool:
        """true/false (also 1/0, yes/no); empty means false."""
        value = self.cells.get(column, "").lower()
        if value in _TRUE or value in _FALSE:
            return value in _TRUE
        raise self._bad(column, "is not true or false", "write true or false")

    def choice(self, column: str, allowed: Sequence[str], default: str) -> str:
        """One of `allowed`; empty means `default`."""
        value = self.cells.get(column, "") or default
        if value not in allowed:
            raise self._bad(
                column,
                "is not allowed",
                "use one of " + ", ".join(allowed) + did_you_mean(value, allowed),
            )
        return value


def resolve_source(source: str | Path, filename: str, fix: str) -> Path:
    """`source` itself, or `source/filename` when `source` is a directory (an audit)."""
    path = Path(source)
    if not path.is_dir():
        return path
    if not (path / filename).is_file():
        raise TableError(str(path), f"has no {filename}", fix)
    return path / filename


def safe_cell(value: object) -> str:
    """A cell as written: text that starts like a formula gets a leading apostrophe, and so
    does text that only looks escaped (`'=x`: apostrophes before a formula start), so that
    `plain_cell` gives every text back as it was."""
    text = "" if value is None else str(value)
    if text.startswith("'") and text.lstrip("'").startswith(FORMULA_STARTS):
        return "'" + text
    if not text.startswith(FORMULA_STARTS):
        return text
    try:
        float(text)
    except ValueError:
        return "'" + text
    return text


def plain_cell(text: str) -> str:
    """A cell as read: whitespace stripped and `safe_cell`'s apostrophe taken off."""
    text = text.strip()
    escaped = text.startswith("'") and text.lstrip("'").startswith(FORMULA_STARTS)
    return text[1:] if escaped else text


def csv_text(
    columns: Sequence[str], rows: Iterable[Sequence[object] | Mapping[str, object]]
) -> str:
    """A CSV file's text: the header, then each row (a sequence, or a mapping by column) with
    every cell through `safe_cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        cells = [row.get(c) for c in columns] if isinstance(row, Mapping) else row
        writer.writerow([safe_cell(cell) for cell in cells])
    return buffer.getvalue()


def read_rows(path: Path, required: Sequence[str], optional: Sequence[str]) -> Iterator[CsvRow]:
    """Yield the data rows of `path` after checking its header against the allowed columns."""
    name = str(path)
    try:
        # a regular file only: a FIFO named results.csv is refused at once, never waited on
        with io.TextIOWrapper(open_regular(path), encoding="utf-8-sig", newline="") as handle:
            _check_complete(handle, name)
            reader = csv.reader(handle, strict=True)
            header = next((row for row in reader if any(cell.strip() for cell in row)), None)
            if header is None:
                raise EmptyTableError(
                    name, "the file is empty", "write a header line: " + ",".join(required)
                )
            header = check_header(header, f"{name}:{reader.line_num}", required, optional)
            count = 0
            for fields in reader:
                if not any(field.strip() for field in fields):
                    continue
                where = f"{name}:{reader.line_num}"
                if any("\x00" in field for field in fields):
                    raise BadValueError(
                        where,
                        "row contains a NUL byte",
                        "the file looks binary or corrupted; export it again",
                    )
                if len(fields) != len(header):
                    raise BadValueError(
                        where,
                        f"row has {len(fields)} fields but the header has {len(header)}",
                        "quote cells that contain commas and give every row every column",
                    )
                count += 1
                yield CsvRow(
                    name,
                    reader.line_num,
                    dict(zip(header, map(plain_cell, fields), strict=True)),
                )
            if count == 0:
                raise EmptyTableError(
                    name,
                    "the file has a header but no data rows",
                    "add one row per (arm, scale, seed, metric)",
                )
    except UnicodeDecodeError as err:
        raise TableError(
            name,
            f"is not UTF-8 text ({err.reason} at byte {err.start})",
            "save the file as UTF-8 CSV",
        ) from None
    except csv.Error as err:
        raise TableError(name, f"is not valid CSV ({err})", "save the file as plain CSV") from None
    except OSError as err:
        raise TableError(
            name, f"cannot be read ({err.strerror})", "check the path" + did_you_mean_path(name)
        ) from None


def _check_complete(handle: TextIO, name: str) -> None:
    """Refuse a file whose last line has no line end: every CSV writer ends its rows with one,
    so the last row was cut, maybe mid-value (`3.1` of `3.14159`), and would read as a number."""
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    if size:
        handle.seek(size - 1)
        last = handle.read(1)
        if last not in ("\n", "\r"):
            raise TableError(
                name,
                "ends without a line break: its last row may be cut mid-value",
                "copy or export the file again; if it is complete, end it with a newline",
            )
    handle.seek(0)


def _long_hint(header: list[str], allowed: Sequence[str]) -> str:
    """A header that names metrics as columns is a wide table: say what the long one is."""
    if "metric" not in allowed or "metric" in header or "value" in header:
        return ""  # a long table's header, or another kind of table (items)
    return (
        "; the table must be long, one row per (arm, scale, seed, metric) with the number in "
        "`value` (a wide table with one column per metric: pandas' melt turns it long)"
    )


def check_header(
    cells: list[str], where: str, required: Sequence[str], optional: Sequence[str]
) -> list[str]:
    header = [cell.strip() for cell in cells]
    allowed = [*required, *optional]
    seen: set[str] = set()
    for column in header:
        if column in seen:
            raise UnknownColumnError(where, f"column {column!r} appears twice", "keep one of them")
        if column not in allowed:
            raise UnknownColumnError(
                where,
                f"unknown column {column!r}",
                "rename or remove it" + did_you_mean(column, allowed) + _long_hint(header, allowed),
            )
        seen.add(column)
    missing = [column for column in required if column not in seen]
    if missing:
        raise MissingColumnError(
            where,
            f"missing column {missing[0]!r}",
            "the header needs " + ",".join(required) + " (optional: " + ",".join(optional) + ")",
        )
    return header
