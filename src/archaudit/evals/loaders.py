"""Benchmark file formats: MosaicML ICL JSONL, BLiMP-style minimal pairs, Zorro text.

Every JSONL format reads files whose field names can be remapped in the suite TOML
(`fields = { query = "question", choices = "endings", gold = "label" }`), so a user adds a
benchmark by writing a table, not code. A malformed row raises `DataError` naming file, line,
field and the fix.
"""

from __future__ import annotations

import glob
import json
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from archaudit.errors import DataError
from archaudit.evals.tasks import Item, LoadContext, TaskSpec, task_format


def task_files(spec: TaskSpec, context: LoadContext, suffix: str) -> list[Path]:
    """The files of a task: `path` is a file, a directory (its `*suffix` files) or a glob."""
    if spec.path is None:
        raise DataError(f"task {spec.name!r} (format {spec.format!r}) needs a `path`")
    root = context.data_root
    target = root / spec.path
    if target.is_dir():
        files = sorted(target.glob(f"*{suffix}"))
    elif glob.has_magic(spec.path):
        files = sorted(Path(p) for p in glob.glob(str(target)))
    else:
        files = [target] if target.is_file() else []
    if not files:
        raise DataError(
            f"task {spec.name!r}: no data at {target} (data root {root}); set ARCHAUDIT_DATA or "
            f"pass --data-root to the directory that holds {spec.path!r} "
            "(default: ../shared/data relative to the current directory)"
        )
    return files


def per_file_limit(limit: int | None, n_files: int) -> int | None:
    """Spread a task's item limit evenly over its files (BLiMP: one file per paradigm)."""
    return None if limit is None else math.ceil(limit / n_files)


class Row:
    """One JSONL record with checked, remapped field access."""

    def __init__(
        self,
        data: Mapping[str, Any],
        *,
        path: Path,
        line: int,
        spec: TaskSpec,
        defaults: Mapping[str, str],
    ) -> None:
        self.data, self.path, self.line, self.spec = data, path, line, spec
        self.names = {**defaults, **spec.fields}

    def _fail(self, field: str, problem: str) -> DataError:
        return DataError(
            f"{self.path}:{self.line}: field {self.names[field]!r} {problem} "
            f"(task {self.spec.name!r}, format {self.spec.format!r})"
        )

    def get(self, field: str) -> Any:
        name = self.names[field]
        if name not in self.data:
            present = ", ".join(sorted(self.data)) or "none"
            raise DataError(
                f"{self.path}:{self.line}: missing field {name!r} (task {self.spec.name!r}, "
                f"format {self.spec.format!r}; fields present: {present}); map it with "
                f'fields = {{ {field} = "<name in the file>" }} in the suite TOML'
            )
        return self.data[name]

    def text(self, field: str) -> str:
        value = self.get(field)
        if not isinstance(value, str):
            raise self._fail(field, f"must be a string, got {type(value).__name__}")
        return value

    def texts(self, field: str) -> tuple[str, ...]:
        value = self.get(field)
        if not (
            isinstance(value, list) and len(value) >= 2 and all(isinstance(v, str) for v in value)
        ):
            raise self._fail(field, "must be a list of at least two strings")
        return tuple(value)

    def index(self, field: str, n: int) -> int:
        value = self.get(field)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._fail(field, f"must be an integer index, got {value!r}")
        if not 0 <= value < n:
            raise self._fail(field, f"= {value} is out of range for {n} choices (0..{n - 1})")
        return value


def read_jsonl(path: Path, limit: int | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for the non-blank lines of a JSONL file, at most `limit` of them."""
    with path.open(encoding="utf-8", errors="surrogateescape") as f:
        count = 0
        for number, line in enumerate(f, start=1):
            if any("\udc80" <= c <= "\udcff" for c in line):  # a byte that is not UTF-8
                raise DataError(f"{path}:{number}: not UTF-8 text; save the file as UTF-8 JSONL")
            if limit is not None and count >= limit:
                return
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(
                    f"{path}:{number}: bad JSON ({err.msg}, column {err.colno}); "
                    "each line must hold one JSON object"
                ) from None
            except RecursionError:
                raise DataError(f"{path}:{number}: JSON nested too deep to read") from None
            if not isinstance(data, dict):
                raise DataError(
                    f"{path}:{number}: expected a JSON object, got {type(data).__name__}"
                )
            count += 1
            yield number, data


Record = tuple[int, tuple[str, ...], tuple[str, ...], int]
"""(line, contexts, continuations, gold) of one item in a file."""
RecordReader = Callable[[Path, int | None, TaskSpec], Iterator[Record]]
RowParser = Callable[[Row], tuple[tuple[str, ...], tuple[str, ...], int]]


def file_format(name: str, *, suffix: str, **kwargs: Any) -> Callable[[RecordReader], RecordReader]:
    """Register a format read from files by `records(path, limit, spec)`. Items are named
    `stem:line`; a multi-file task groups them by file (BLiMP and Zorro paradigms)."""

    def register(records: RecordReader) -> RecordReader:
        def load(spec: TaskSpec, context: LoadContext) -> list[Item]:
            files = task_files(spec, context, suffix)
            limit = per_file_limit(context.limit, len(files))
            grouped = len(files) > 1
            return [
                Item(
                    id=f"{path.stem}:{line}",
                    contexts=contexts,
                    continuations=continuations,
                    gold=gold,
                    group=path.stem if grouped else "",
                )
                for path in files
                for line, contexts, continuations, gold in records(path, limit, spec)
            ]

        task_format(name, **kwargs)(load)
        return records

    return register


def jsonl_format(
    name: str, *, fields: Mapping[str, str], **kwargs: Any
) -> Callable[[RowParser], RowParser]:
    """Register a JSONL format from a function Row → (contexts, continuations, gold)."""

    def register(parse: RowParser) -> RowParser:
        def records(path: Path, limit: int | None, spec: TaskSpec) -> Iterator[Record]:
            for line, data in read_jsonl(path, limit):
                yield (line, *parse(Row(data, path=path, line=line, spec=spec, defaults=fields)))

        file_format(name, suffix=".jsonl", fields=fields, **kwargs)(records)
        return parse

    return register


@jsonl_format(
    "language_modeling", kind="cloze", fields={"context": "context", "continuation": "continuation"}
)
def language_modeling(row: Row) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    return (row.text("context"),), (row.text("continuation"),), 0


@jsonl_format(
    "multiple_choice",
    kind="choice",
    metrics=("acc", "acc_norm"),
    fields={"query": "query", "choices": "choices", "gold": "gold"},
)
def multiple_choice(row: Row) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    choices = row.texts("choices")
    return (row.text("query"),), choices, row.index("gold", len(choices))


@jsonl_format(
    "schema",
    kind="choice",
    fields={"context_options": "context_options", "continuation": "continuation", "gold": "gold"},
)
def schema(row: Row) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    # Winograd-style partial scoring: the options differ in the context, the continuation is
    # shared, so only `acc` is meaningful (lm-eval reports only acc for WinoGrande too).
    options = row.texts("context_options")
    return options, (row.text("continuation"),), row.index("gold", len(options))


@jsonl_format(
    "minimal_pairs", kind="choice", fields={"good": "sentence_good", "bad": "sentence_bad"}
)
def minimal_pairs(row: Row) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    # lm-eval's BLiMP: empty context (the prefix token conditions), each whole sentence scored.
    return ("",), (row.text("good"), row.text("bad")), 0


@file_format("zorro", suffix=".txt", kind="choice")
def zorro(path: Path, limit: int | None, spec: TaskSpec) -> Iterator[Record]:
    """Zorro text files: lines 2k-1 (ungrammatical) and 2k (grammatical) form pair k."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) % 2:
        raise DataError(
            f"{path}:{len(lines)}: odd number of lines; Zorro files hold pairs "
            "of lines (ungrammatical, then grammatical)"
        )
    for k in range(0, len(lines) if limit is None else min(len(lines), 2 * limit), 2):
        bad, good = lines[k].strip(), lines[k + 1].strip()
        if not (bad and good):
            raise DataError(f"{path}:{k + 1 if not bad else k + 2}: empty sentence in a pair")
        yield k + 2, ("",), (good, bad), 0
