"""Key-value retrieval on real data: the JSON kv task of "Lost in the Middle" (Liu et al.,
TACL 2024) and HELMET's json_kv (Yen et al. 2025), accuracy by the gold record's position.

Each JSONL record is `{"ordered_kv_records": [[key, value], ...], "key": k, "value": v}` with
(uuid) strings. `params.positions` moves the gold record to each of those indices in turn (the
others keep their order; negative indices count from the end), one item per record and
position, grouped `position=<i>`; without it the record's own order is kept. The prompt is the
paper's (`kv_retrieval.prompt`); the model decodes greedily up to `max_new_tokens`, and an item
is correct when the gold value is a substring of the output, case-insensitive (the paper's
metric), or with `match = "exact"` when the stripped output equals it. `params.keys = N` keeps
N records of each row (the gold one and the first N − 1 others), so the published 75-key file
serves a small model as a 5-key task; the file may be read compressed as published (`.gz`).
The gold value's log-likelihood and bits per byte are kept per item as for every task.

    [[tasks]]
    name = "kv75"
    format = "json_kv"
    path = "benchmarks/kv_retrieval/kv-retrieval-75_keys.jsonl.gz"
    limit = 50
    params = { positions = [0, 24, 49, 74], match = "substring", max_new_tokens = 48 }
    # or a 5-key task from the same file: params = { keys = 5, positions = [0, 2, 4] }
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from archaudit.errors import ConfigError, DataError
from archaudit.evals.loaders import data_stem, per_file_limit, read_jsonl, task_files
from archaudit.evals.tasks import Item, LoadContext, TaskSpec, task_format

PROMPT = (
    "Extract the value corresponding to the specified key in the JSON object below.\n\n"
    'JSON data:\n{records}\n\nKey: "{key}"\nCorresponding value:'
)
"""Lost in the Middle's `kv_retrieval.prompt`, filled as its `get_kv_retrieval_prompt`."""
MATCHES: dict[str, Callable[[str, str], bool]] = {
    "substring": lambda output, value: value.lower() in output.lower(),
    "exact": lambda output, value: output.strip() == value,
}
PARAMS = ("positions", "match", "max_new_tokens", "keys")
MAX_NEW_TOKENS = 1024
"""The most tokens one answer may decode: a uuid is 36 characters."""


def format_records(records: list[tuple[str, str]]) -> str:
    """`{"k1": "v1",\\n "k2": "v2"}`: one record a line, as the paper's prompt writes them."""
    lines = [f'"{key}": "{value}"' for key, value in records]
    return "{" + ",\n ".join(lines) + "}"


def kv_prompt(records: list[tuple[str, str]], key: str) -> str:
    return PROMPT.format(records=format_records(records), key=key)


def matches(spec: TaskSpec, output: str, value: str) -> bool:
    """Whether a generated `output` retrieves `value` under the task's `params.match`."""
    return MATCHES[spec.params.get("match", "substring")](output, value)


def check_params(spec: TaskSpec) -> None:
    unknown = sorted(set(spec.params) - set(PARAMS))
    if unknown:
        raise ConfigError(
            f"task {spec.name!r}: unknown params {unknown} for json_kv "
            f"(allowed: {', '.join(PARAMS)})"
        )
    match = spec.params.get("match", "substring")
    if match not in MATCHES:
        raise ConfigError(f"task {spec.name!r}: params.match = {match!r}; use substring or exact")
    positions = spec.params.get("positions", [])
    if not (isinstance(positions, list) and all(_whole(p, -(2**31)) for p in positions)):
        raise ConfigError(f"task {spec.name!r}: params.positions = {positions!r} must be a "
                          "list of record indices (negative ones count from the end)")  # fmt: skip
    for key, low, high in (("keys", 1, 2**31), ("max_new_tokens", 1, MAX_NEW_TOKENS)):
        value = spec.params.get(key, low)
        if not (_whole(value, low) and value <= high):
            raise ConfigError(
                f"task {spec.name!r}: params.{key} = {value!r} must be a whole number in "
                f"[{low}, {high}]"
            )


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _parse(data: dict[str, Any], where: str) -> tuple[list[tuple[str, str]], int]:
    """(records, index of the gold record) of one JSONL row."""
    records, key, value = (data.get(k) for k in ("ordered_kv_records", "key", "value"))
    if not (
        isinstance(records, list)
        and all(
            isinstance(r, list) and len(r) == 2 and all(isinstance(x, str) for x in r)
            for r in records
        )
        and isinstance(key, str)
        and isinstance(value, str)
    ):
        raise DataError(
            f'{where}: expected {{"ordered_kv_records": [[key, value], ...], "key": str, '
            f'"value": str}}, got the fields {", ".join(sorted(data)) or "none"}'
        )
    gold = [i for i, (k, _) in enumerate(records) if k == key]
    if len(gold) != 1 or records[gold[0]][1] != value:
        raise DataError(
            f"{where}: key {key!r} must appear exactly once in ordered_kv_records, "
            f"with value {value!r}"
        )
    return [(k, v) for k, v in records], gold[0]


def _fewer(
    records: list[tuple[str, str]], gold: int, keys: int, where: str
) -> tuple[list[tuple[str, str]], int]:
    """`keys` of the records: the gold one and the first keys − 1 others, in their order (a
    75-key file read as a 5-key task, for models whose context or speed cannot take 75)."""
    if keys > len(records):
        raise DataError(f"{where}: params.keys = {keys}, but the record has {len(records)} keys")
    kept = sorted({gold, *[i for i in range(len(records)) if i != gold][: keys - 1]})
    return [records[i] for i in kept], kept.index(gold)


def _moved(records: list[tuple[str, str]], gold: int, index: int) -> list[tuple[str, str]]:
    """The records with the gold one moved to `index`, the others in their order."""
    others = records[:gold] + records[gold + 1 :]
    return [*others[:index], records[gold], *others[index:]]


@task_format(
    "json_kv", kind="generate", delimiter=" ", beyond_context=True, params=PARAMS, match=matches
)
def json_kv(spec: TaskSpec, context: LoadContext) -> list[Item]:
    """One item per record and gold position; `limit` counts records (per file)."""
    check_params(spec)
    files = task_files(spec, context, ".jsonl")
    limit = per_file_limit(context.limit, len(files))
    return [item for path in files for item in _items(path, limit, spec)]


def _items(path: Path, limit: int | None, spec: TaskSpec) -> Iterator[Item]:
    positions, keys = spec.params.get("positions"), spec.params.get("keys")
    for line, data in read_jsonl(path, limit):
        records, gold = _parse(data, f"{path}:{line}")
        if keys is not None:
            records, gold = _fewer(records, gold, keys, f"{path}:{line}")
        for position in positions if positions is not None else [gold]:
            if not (isinstance(position, int) and -len(records) <= position < len(records)):
                raise ConfigError(
                    f"task {spec.name!r}: params.positions has {position!r}, not an index "
                    f"into {len(records)} records ({path}:{line})"
                )
            index = position % len(records)
            key, value = records[gold]
            yield Item(
                id=f"{data_stem(path)}:{line}@{index}",
                contexts=(kv_prompt(_moved(records, gold, index), key),),
                continuations=(value,),
                group=f"position={index}",
            )
