"""pandas DataFrames in and out of `archaudit.stats` (the `frames` extra: pandas, pyarrow).

A DataFrame in the long shape (arm, scale, seed, metric, value[, family, status, step, tuned])
goes through the very checks a CSV does: each row becomes the CSV row it would have been
(`CsvRow`, numbered as if the header were line 1), so a bad cell is reported the same way and
`judge(df)` equals `judge` on the same CSV. pandas is imported only here, inside functions:
the statistics need none of it.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from archaudit.errors import DataError
from archaudit.files import open_regular
from archaudit.stats.records.csvio import CsvRow, check_header
from archaudit.stats.records.errors import EmptyTableError

FRAME_SOURCE = "<DataFrame>"


def is_frame(value: object) -> bool:
    """A pandas DataFrame, recognised without importing pandas."""
    return type(value).__name__ == "DataFrame" and hasattr(value, "itertuples")


def pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise DataError(
            "DataFrames need the `frames` extra: pip install 'archaudit[frames]'"
        ) from None
    return pandas


def frame_rows(
    frame: Any, required: Sequence[str], optional: Sequence[str], name: str = FRAME_SOURCE
) -> Iterator[CsvRow]:
    """The rows of `frame` as the CSV rows they would be, after the same header check."""
    header = check_header([str(c) for c in frame.columns], f"{name}:1", required, optional)
    if len(frame) == 0:
        raise EmptyTableError(name, "the DataFrame has no rows", "add one row per run and metric")
    for line, values in enumerate(frame.itertuples(index=False, name=None), start=2):
        yield CsvRow(name, line, dict(zip(header, map(cell_text, values), strict=True)))


def cell_text(value: Any) -> str:
    """A cell as a CSV would hold it: missing values empty, numbers exactly (repr)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if type(value).__name__ in ("NAType", "NaTType"):
        return ""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "true" if value else "false"
    if hasattr(value, "item"):  # numpy scalars
        return cell_text(value.item())
    if isinstance(value, float):
        return repr(value)
    return str(value).strip()


def read_parquet(path: Path) -> Any:
    """A Parquet file as a DataFrame, its list columns as lists: what `to_frame()` wrote,
    equal to it (pyarrow alone gives a list cell back as a numpy array)."""
    pd = pandas()
    try:
        with open_regular(path) as handle:  # a FIFO named results.parquet is never waited on
            frame = pd.read_parquet(handle)
    except ImportError:
        raise DataError(f"{path}: reading Parquet needs pyarrow (the `frames` extra)") from None
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not a readable Parquet file ({err})") from None
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = pd.Series([_listed(v) for v in frame[column]], dtype=object)
    return frame


def _listed(value: Any) -> Any:
    """Numpy arrays (Parquet's lists) as lists, also inside lists and dicts; a missing number
    in a list as None, as `to_frame()` writes it (Parquet's float lists read it as NaN)."""
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) > 0:
        value = value.tolist()  # numbers as Python's, not numpy's
    if isinstance(value, dict):
        return {k: _listed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [None if _missing(v) else _listed(v) for v in value]
    return value


def declared_frame(records: Sequence[Mapping[str, Any]], dtypes: Mapping[str, str]) -> Any:
    """A DataFrame of flat records with each column in its declared dtype (pandas' nullable
    `string`, `Int64`, `boolean`, or `float64`: missing values <NA>, NaN in float64), also when
    no record has a value for it: a column of Nones would be an untyped `null` column in Parquet
    (`step` when no run has one)."""
    pd = pandas()
    columns = {
        column: pd.Series(
            [None if _missing(r[column]) else r[column] for r in records], dtype=dtype
        )
        for column, dtype in dtypes.items()
    }
    return pd.DataFrame(columns)


def typed_frame(records: Sequence[dict[str, Any]], record_type: type | None = None) -> Any:
    """A DataFrame of result records (`JsonResult.to_frame`) in pandas' nullable dtypes, which a
    Parquet round trip keeps: nested dicts become dotted columns, a column's missing values
    are <NA> (not None or NaN), and its dtype is boolean, Int64, Float64 or string as its
    values are, or as `record_type` (the records' dataclass) declares it where no record has
    a value (a nested record that is None everywhere becomes its declared columns, all <NA>);
    sequences (intervals, seed Δs) stay lists, stored by Parquet as lists (`read_parquet`
    gives them back as lists)."""
    pd = pandas()
    frame = pd.json_normalize(list(records)) if records else pd.DataFrame()
    declared = declared_dtypes(record_type) if record_type is not None else {}
    columns: dict[str, Any] = {}
    for column in frame.columns:
        values = frame[column]
        nested = [c for c in declared if c.startswith(column + ".") and c not in frame.columns]
        if nested and all(map(_missing, values)):  # a record that no row has
            columns |= {c: pd.array([None] * len(frame), dtype=declared[c]) for c in nested}
        elif column in declared and all(map(_missing, values)):
            columns[column] = pd.array([None] * len(frame), dtype=declared[column])
        else:
            columns[column] = _nullable(pd, values)
    return pd.DataFrame(columns, index=frame.index)


def declared_dtypes(record_type: type) -> dict[str, str]:
    """{dotted column: nullable dtype} for the scalar fields (and `JSON_PROPERTIES`) of a
    result dataclass, nested records flattened; sequences and unions of several types have
    none."""
    hints = [(f.name, f.type) for f in dataclasses.fields(record_type)
             if not f.name.startswith("_") and f.metadata.get("json", True)]  # fmt: skip
    hints += [(name, getattr(record_type, name).fget.__annotations__.get("return"))
              for name in getattr(record_type, "JSON_PROPERTIES", ())]  # fmt: skip
    namespace = vars(sys.modules[record_type.__module__])
    out: dict[str, str] = {}
    for name, written in hints:
        try:  # annotations are strings (`from __future__ import annotations`)
            hint = eval(written, namespace) if isinstance(written, str) else written
        except NameError:  # a name imported only for type checking: no declared dtype
            continue
        kind = _one_type(hint)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            out |= {f"{name}.{k}": v for k, v in declared_dtypes(kind).items()}
        elif (dtype := _scalar_dtype(kind)) is not None:
            out[name] = dtype
    return out


def _one_type(hint: Any) -> Any:
    """`X` of `X` or `X | None`; None for any other union."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        kinds = [a for a in typing.get_args(hint) if a is not type(None)]
        return kinds[0] if len(kinds) == 1 else None
    return hint


def _scalar_dtype(kind: Any) -> str | None:
    if not isinstance(kind, type):
        return None
    if kind is bool:
        return "boolean"
    if kind is int:
        return "Int64"
    if kind is float:
        return "Float64"
    if issubclass(kind, str | enum.StrEnum):
        return "string"
    return None


def _nullable(pd: Any, column: Any) -> Any:
    values = [v for v in column if not _missing(v)]
    for dtype, holds in _NULLABLE:
        if values and all(map(holds, values)):
            return pd.array([None if _missing(v) else v for v in column], dtype=dtype)
    return column


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


_NULLABLE: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    ("boolean", lambda v: isinstance(v, bool)),
    ("Int64", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    ("Float64", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    ("string", lambda v: isinstance(v, str)),
)
"""Each nullable dtype and what its values must be (a StrEnum member is a str), in order."""


def parquet_twin(csv_path: Path, load: Callable[[Path], Any]) -> Path | None:
    """`<name>.parquet` beside a results or items CSV, read back through `load` (so the
    Parquet holds exactly what the CSV's checks accept). Nothing without pandas and pyarrow;
    a CSV with no rows leaves no Parquet (a stale one is removed)."""
    path = csv_path.with_suffix(".parquet")
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        return None
    try:
        frame = load(csv_path).to_frame()
    except EmptyTableError:
        frame = None
    if frame is None or frame.empty:
        path.unlink(missing_ok=True)
        return None
    return write_parquet(frame, path)


def write_parquet(frame: Any, path: Path) -> Path:
    """Write `frame` to `path` atomically (a reader never sees half a file; the temporary name
    is unique to the writer, so two processes exporting at once never share one)."""
    from archaudit.files import atomic_write

    atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    return path
