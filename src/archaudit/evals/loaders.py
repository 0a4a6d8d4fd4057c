"""Benchmark file formats: MosaicML ICL JSONL, BLiMP-style minimal pairs, Zorro text.

Every JSONL format reads files whose field names can be remapped in the suite TOML
(`fields = { query = "question", choices = "endings", gold = "label" }`), so a user adds a
benchmark by writing a table, not code. Benchmarks read as published:

- `choices` may name several fields (`fields = { choices = ["sol1", "sol2"] }`, PIQA), or hold
  a `{answer: label}` table whose 1-labels are the true answers (TruthfulQA's `mc_task.json`;
  several true answers give MC2); then no `gold` field is read;
- `labels = "file"`: gold labels from a line-aligned side file (PIQA's `valid-labels.lst`);
- `prompt = "Question: {goal}\nAnswer:"`: the context from the row's fields (lm-eval's
  `doc_to_text`) instead of the `query` field;
- a `.json` file holding a list of records reads like a JSONL file (record k as "line" k).

A malformed row raises `DataError` naming file, line, field and the fix.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import json
import lzma
import math
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from archaudit.errors import DataError, did_you_mean
from archaudit.evals.tasks import Item, LoadContext, TaskSpec, task_format


def task_files(spec: TaskSpec, context: LoadContext, suffix: str) -> list[Path]:
    """The files of a task: `path` is a file, a directory (its `*suffix` files) or a glob."""
    if spec.path is None:
        raise DataError(f"task {spec.name!r} (format {spec.format!r}) needs a `path`")
    root = context.data_root
    target = root / spec.path
    if target.is_dir():
        ends = (suffix, *(suffix + packed for packed in COMPRESSED))
        files = sorted(p for p in target.iterdir() if p.name.endswith(ends))
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
        label: tuple[Path, int, str] | None = None,
    ) -> None:
        self.data, self.path, self.line, self.spec = data, path, line, spec
        self.names = {**defaults, **spec.fields}
        self.label = label
        """(labels file, its line, the text there): the gold label from a side file."""

    def _fail(self, field: str, problem: str) -> DataError:
        return DataError(
            f"{self.path}:{self.line}: field {self.names[field]!r} {problem} "
            f"(task {self.spec.name!r}, format {self.spec.format!r})"
        )

    def get(self, field: str, name: str | None = None) -> Any:
        mapped = name or self.names[field]
        if not isinstance(mapped, str):
            raise self._fail(field, "names several fields where this format reads one")
        name = mapped
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
        names = self.names[field]
        value = [self.get(field, n) for n in names] if isinstance(names, list) else self.get(field)
        if not (
            isinstance(value, list) and len(value) >= 2 and all(isinstance(v, str) for v in value)
        ):
            raise self._fail(field, "must be a list of at least two strings")
        return tuple(value)

    def labelled(self, field: str) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
        """(choices, true indices) of a `{answer: 0/1}` table; None when `field` is no table."""
        value = self.get(field) if isinstance(self.names[field], str) else None
        if not isinstance(value, dict):
            return None
        if len(value) < 2 or not all(label in (0, 1) for label in value.values()):
            raise self._fail(field, "must map at least two answers to labels 0 or 1")
        true = tuple(i for i, label in enumerate(value.values()) if label == 1)
        if not true:
            raise self._fail(field, "labels no answer 1 (true): there is nothing to score")
        return tuple(value), true

    def index(self, field: str, n: int) -> int:
        if field == "gold" and self.label is not None:
            return _side_label(*self.label, n)
        value = self.get(field)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._fail(field, f"must be an integer index, got {value!r}")
        if not 0 <= value < n:
            raise self._fail(field, f"= {value} is out of range for {n} choices (0..{n - 1})")
        return value

    def prompt(self, field: str) -> str:
        """The context: the spec's prompt template filled from the row, else `field`."""
        template = self.spec.prompt
        if template is None:
            return self.text(field)
        return _PLACEHOLDER.sub(lambda m: self._placeholder(m.group(1)), template)

    def _placeholder(self, name: str) -> str:
        if name not in self.data:
            present = ", ".join(sorted(self.data)) or "none"
            raise DataError(
                f"{self.path}:{self.line}: the prompt of task {self.spec.name!r} names "
                f"{{{name}}}, which this record lacks{did_you_mean(name, self.data)} "
                f"(fields present: {present})"
            )
        return str(self.data[name])


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _side_label(path: Path, line: int, text: str, n: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise DataError(f"{path}:{line}: label {text!r} is not an integer") from None
    if not 0 <= value < n:
        raise DataError(f"{path}:{line}: label {value} is out of range for {n} choices")
    return value


def read_labels(spec: TaskSpec, context: LoadContext) -> list[tuple[Path, int, str]]:
    """The task's side file of labels: (file, line, text) per non-blank line."""
    path = context.data_root / str(spec.labels)
    if not path.is_file():
        raise DataError(
            f"task {spec.name!r}: labels file {path} not found (labels = {spec.labels!r}, "
            f"data root {context.data_root})"
        )
    lines = read_text(path, "labels file").splitlines()
    return [(path, k, text.strip()) for k, text in enumerate(lines, start=1) if text.strip()]


def read_text(path: Path, what: str) -> str:
    """A benchmark's text file (labels, Zorro pairs) as UTF-8; a binary file or a folder in
    its place is one line naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: {what} is not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise DataError(f"{path}: {what} cannot be read ({err.strerror})") from None


COMPRESSED: dict[str, Callable[..., Any]] = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
"""Compressed JSONL as published (Lost in the Middle ships `kv-retrieval-75_keys.jsonl.gz`)."""


def data_stem(path: Path) -> str:
    """A data file's name without its format and compression suffixes: item ids stay the same
    whether the file is read compressed or not."""
    return Path(path.name.removesuffix(path.suffix) if path.suffix in COMPRESSED else path).stem


def read_jsonl(path: Path, limit: int | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for the non-blank lines of a JSONL file, at most `limit` of them;
    a `.json` file holding a list gives (record number, object)."""
    if path.suffix == ".json":
        yield from _read_json_list(path, limit)
        return
    try:
        handle = COMPRESSED.get(path.suffix, open)(
            path, "rt", encoding="utf-8", errors="surrogateescape"
        )
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror})") from None
    with handle as f:
        count = 0
        for number, line in _lines(f, path):
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


def _lines(handle: Any, path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines; a damaged compressed stream is one line naming the file."""
    number = 0
    try:
        for number, line in enumerate(handle, start=1):
            yield number, line
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as err:
        raise DataError(
            f"{path}:{number + 1}: cannot be read ({err}); a compressed file must be whole"
        ) from None


def _read_json_list(path: Path, limit: int | None) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        data = json.loads(read_text(path, "task file"))
    except RecursionError:
        raise DataError(f"{path}: nested too deeply to be a task file") from None
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: bad JSON ({err.msg}, column {err.colno})") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: a .json task file must hold a list of records")
    for number, record in enumerate(data[:limit], start=1):
        if not isinstance(record, dict):
            raise DataError(f"{path}: record {number} is a {type(record).__name__}, not an object")
        yield number, record


class Choices(NamedTuple):
    """One item as a file gives it: contexts pair with continuations (see `Item`)."""

    contexts: tuple[str, ...]
    continuations: tuple[str, ...]
    gold: int
    true: tuple[int, ...] = ()


Record = tuple[int, Choices]
"""(line, choices) of one item in a file."""
RecordReader = Callable[[Path, int | None, TaskSpec, LoadContext], Iterator[Record]]
RowParser = Callable[[Row], Choices]


def file_format(name: str, *, suffix: str, **kwargs: Any) -> Callable[[RecordReader], RecordReader]:
    """Register a format read from files by `records(path, limit, spec, context)`. Items are
    named `stem:line`; a multi-file task groups them by file (BLiMP and Zorro paradigms)."""

    def register(records: RecordReader) -> RecordReader:
        def load(spec: TaskSpec, context: LoadContext) -> list[Item]:
            files = task_files(spec, context, suffix)
            if spec.labels is not None and len(files) > 1:
                raise DataError(
                    f"task {spec.name!r}: a labels file aligns with one data file, but "
                    f"path {spec.path!r} holds {len(files)}"
                )
            limit = per_file_limit(context.limit, len(files))
            grouped = len(files) > 1
            return [
                Item(
                    id=f"{data_stem(path)}:{line}",
                    contexts=item.contexts,
                    continuations=item.continuations,
                    gold=item.gold,
                    true=item.true,
                    group=data_stem(path) if grouped else "",
                )
                for path in files
                for line, item in records(path, limit, spec, context)
            ]

        task_format(name, **kwargs)(load)
        return records

    return register


def jsonl_format(
    name: str, *, fields: Mapping[str, str], **kwargs: Any
) -> Callable[[RowParser], RowParser]:
    """Register a JSONL format from a function Row → Choices."""

    def register(parse: RowParser) -> RowParser:
        def records(
            path: Path, limit: int | None, spec: TaskSpec, context: LoadContext
        ) -> Iterator[Record]:
            labels = read_labels(spec, context) if spec.labels is not None else None
            rows = list(read_jsonl(path, limit))
            if labels is not None:
                _check_aligned(path, len(rows), labels, complete=limit is None)
            for k, (line, data) in enumerate(rows):
                label = labels[k] if labels is not None else None
                row = Row(data, path=path, line=line, spec=spec, defaults=fields, label=label)
                yield line, parse(row)

        file_format(name, suffix=".jsonl", fields=fields, **kwargs)(records)
        return parse

    return register


def _check_aligned(
    path: Path, records: int, labels: list[tuple[Path, int, str]], *, complete: bool
) -> None:
    """A side file of labels must hold one label per record (all of them, unless limited)."""
    if len(labels) < records or (complete and len(labels) != records):
        where = labels[0][0] if labels else "the labels file"
        raise DataError(
            f"{where} holds {len(labels)} labels but {path} has "
            f"{records}{'' if complete else ' or more'} records: they must align line by line"
        )


@jsonl_format(
    "language_modeling", kind="cloze", fields={"context": "context", "continuation": "continuation"}
)
def language_modeling(row: Row) -> Choices:
    return Choices((row.prompt("context"),), (row.text("continuation"),), 0)


@jsonl_format(
    "multiple_choice",
    kind="choice",
    metrics=("acc", "acc_norm", "mc2"),
    fields={"query": "query", "choices": "choices", "gold": "gold"},
)
def multiple_choice(row: Row) -> Choices:
    labelled = row.labelled("choices")
    if labelled is not None:  # {answer: label}: the first true answer is the gold one
        choices, true = labelled
        return Choices((row.prompt("query"),), choices, true[0], true if len(true) > 1 else ())
    choices = row.texts("choices")
    return Choices((row.prompt("query"),), choices, row.index("gold", len(choices)))


@jsonl_format(
    "schema",
    kind="choice",
    fields={"context_options": "context_options", "continuation": "continuation", "gold": "gold"},
)
def schema(row: Row) -> Choices:
    # Winograd-style partial scoring: the options differ in the context, the continuation is
    # shared, so only `acc` is meaningful (lm-eval reports only acc for WinoGrande too).
    options = row.texts("context_options")
    return Choices(options, (row.text("continuation"),), row.index("gold", len(options)))


@jsonl_format(
    "minimal_pairs", kind="choice", fields={"good": "sentence_good", "bad": "sentence_bad"}
)
def minimal_pairs(row: Row) -> Choices:
    # lm-eval's BLiMP: empty context (the prefix token conditions), each whole sentence scored.
    return Choices(("",), (row.text("good"), row.text("bad")), 0)


@file_format("zorro", suffix=".txt", kind="choice")
def zorro(path: Path, limit: int | None, spec: TaskSpec, context: LoadContext) -> Iterator[Record]:
    """Zorro text files: lines 2k-1 (ungrammatical) and 2k (grammatical) form pair k."""
    lines = read_text(path, "Zorro file").splitlines()
    if len(lines) % 2:
        raise DataError(
            f"{path}:{len(lines)}: odd number of lines; Zorro files hold pairs "
            "of lines (ungrammatical, then grammatical)"
        )
    for k in range(0, len(lines) if limit is None else min(len(lines), 2 * limit), 2):
        bad, good = lines[k].strip(), lines[k + 1].strip()
        if not (bad and good):
            raise DataError(f"{path}:{k + 1 if not bad else k + 2}: empty sentence in a pair")
        yield k + 2, Choices(("",), (good, bad), 0)
