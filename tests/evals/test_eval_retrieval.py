"""JSON key-value retrieval (Lost in the Middle / HELMET json_kv) from files: the paper's prompt,
the gold record moved to any index, generation judged by substring or exact match, and
accuracy grouped by the gold position."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

from archaudit.errors import ConfigError, DataError
from archaudit.evals import TaskSpec, score_task
from archaudit.evals.retrieval import kv_prompt
from archaudit.evals.tasks import LoadContext, load_items


def uuid_like(rng: random.Random) -> str:
    """A uuid4-shaped string from a seeded generator (uuid4 itself is not reproducible)."""
    digits = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return "-".join(digits[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))


def kv_file(path: Path, *, records: int, pairs: int, gold: int, seed: int = 0) -> Path:
    """`records` JSONL rows of `pairs` uuid pairs each, the gold pair at index `gold`."""
    rng = random.Random(seed)
    rows = []
    for _ in range(records):
        kv = [[uuid_like(rng), uuid_like(rng)] for _ in range(pairs)]
        rows.append({"ordered_kv_records": kv, "key": kv[gold][0], "value": kv[gold][1]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _spec(**params: object) -> TaskSpec:
    return TaskSpec(name="kv", format="json_kv", path="kv.jsonl", params=params)


def _load(root: Path, spec: TaskSpec, limit: int | None = None) -> list:
    return load_items(spec, LoadContext(data_root=root, limit=limit, model=None))


def test_prompt_is_the_papers() -> None:
    """Lost in the Middle's own test of get_kv_retrieval_prompt (tests/test_prompting.py)."""
    data = [
        ("test key1", "test value1"),
        ("test key2", "test value2"),
        ("test key3", "test value3"),
    ]
    assert kv_prompt(data, "test key2") == "\n".join(
        [
            "Extract the value corresponding to the specified key in the JSON object below.",
            "",
            "JSON data:",
            '{"test key1": "test value1",',
            ' "test key2": "test value2",',
            ' "test key3": "test value3"}',
            "",
            'Key: "test key2"',
            "Corresponding value:",
        ]
    )


def test_the_gold_record_moves_to_every_position(tmp_path: Path) -> None:
    kv_file(tmp_path / "kv.jsonl", records=2, pairs=10, gold=3)
    items = _load(tmp_path, _spec(positions=[0, 5, -1]))
    assert [i.group for i in items] == ["position=0", "position=5", "position=9"] * 2
    assert items[0].id == "kv:1@0" and items[5].id == "kv:2@9"
    row = json.loads((tmp_path / "kv.jsonl").read_text().splitlines()[0])
    for item, index in zip(items[:3], (0, 5, 9), strict=True):
        shown = re.findall(r'"([0-9a-f-]{36})": "([0-9a-f-]{36})"', item.contexts[0])
        assert len(shown) == 10 and shown[index] == (row["key"], row["value"])
        others = [tuple(kv) for kv in row["ordered_kv_records"] if kv[0] != row["key"]]
        assert [kv for kv in shown if kv[0] != row["key"]] == others  # order kept
        assert item.continuations == (row["value"],)
    assert [i.group for i in _load(tmp_path, _spec())] == ["position=3"] * 2  # as in the file
    assert len(_load(tmp_path, _spec(positions=[0, 1]), limit=1)) == 2  # limit counts records


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ({"ordered_kv_records": [["a", "b"]], "key": "a"}, r"kv.jsonl:1: expected .*value"),
        ({"ordered_kv_records": [["a", "b"]], "key": "c", "value": "b"}, "key 'c' must appear"),
        ({"ordered_kv_records": [["a", "b"]], "key": "a", "value": "x"}, "with value 'x'"),
    ],
)
def test_malformed_records_name_file_and_line(tmp_path: Path, row: dict, match: str) -> None:
    (tmp_path / "kv.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match=match):
        _load(tmp_path, _spec())


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"positon": [0]}, r"unknown params \['positon'\]"),
        ({"match": "fuzzy"}, "use substring or exact"),
        ({"positions": [10]}, "not an index into 10 records"),
    ],
)
def test_bad_params_are_named(tmp_path: Path, params: dict, match: str) -> None:
    kv_file(tmp_path / "kv.jsonl", records=1, pairs=10, gold=0)
    with pytest.raises(ConfigError, match=match):
        _load(tmp_path, _spec(**params))


class EarlyReader:
    """A byte-level model that answers with the gold value when the gold record sits in the
    first half of the JSON object, and with the first record's value otherwise (lost in the
    middle, caricatured): greedy decoding spells the answer, then a newline."""

    name, max_length, context_length, position_limit = "early-reader", 64, 64, None
    prefix_token_id, tree_attention, device = None, False, torch.device("cpu")
    vocab_size = 256

    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(ids).decode(errors="replace")

    def logits_at(self, ids: torch.Tensor, index: torch.Tensor, **_: object) -> torch.Tensor:
        out = torch.zeros(*index.shape, 256)
        for b, row in enumerate(ids.tolist()):
            for k, position in enumerate(index[b].tolist()):
                out[b, k, self._next(self.decode(row[: position + 1]))] = 10.0
        return out

    def _next(self, text: str) -> int:
        prompt, _, answered = text.partition("Corresponding value:")
        pairs = re.findall(r'"([^"]+)": "([^"]+)"', prompt)
        key = re.search(r'Key: "([^"]+)"', prompt)
        if not pairs or key is None:
            return ord(" ")
        keys = [k for k, _ in pairs]
        gold = keys.index(key.group(1)) if key.group(1) in keys else 0
        answer = " " + (pairs[gold][1] if gold < len(pairs) / 2 else pairs[0][1]) + "\n"
        return ord(answer[len(answered)]) if len(answered) < len(answer) else ord("\n")


@pytest.mark.parametrize("match", ["substring", "exact"])
def test_generation_is_judged_and_grouped_by_position(tmp_path: Path, match: str) -> None:
    kv_file(tmp_path / "kv.jsonl", records=3, pairs=6, gold=2)
    spec = _spec(positions=[0, 1, 4, 5], match=match, max_new_tokens=60)
    result = score_task(EarlyReader(), spec, _load(tmp_path, spec), show_progress=False)
    accuracy = {group: acc.value for group, acc in result.groups.items()}
    assert accuracy == {"position=0": 1.0, "position=1": 1.0, "position=4": 0.0, "position=5": 0.0}
    item = result.items[0]
    assert (
        item.output.strip()
        == json.loads((tmp_path / "kv.jsonl").read_text().splitlines()[0])["value"]
    )
    assert result.kind == "generate" and result.acc.value == 0.5 and result.chance == 0.0
    assert all(i.gold_bpb >= 0 for i in result.items)


def test_substring_is_case_insensitive_and_exact_is_not_lenient() -> None:
    from archaudit.evals.retrieval import matches

    output, value = ' "AB12-cd" is the value', "ab12-CD"
    assert matches(_spec(), output, value) and matches(_spec(match="substring"), output, value)
    assert not matches(_spec(match="exact"), output, value)
    assert matches(_spec(match="exact"), " ab12-CD \n", value)


def test_the_published_gzip_file_reads_as_the_plain_one(tmp_path: Path) -> None:
    """Lost in the Middle ships `kv-retrieval-75_keys.jsonl.gz`: the same items, the same ids."""
    import gzip

    plain = kv_file(tmp_path / "kv.jsonl", records=2, pairs=8, gold=1)
    (tmp_path / "kv.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    packed = TaskSpec(name="kv", format="json_kv", path="kv.jsonl.gz", params={"positions": [0]})
    assert _load(tmp_path, packed) == _load(tmp_path, _spec(positions=[0]))
    (tmp_path / "kv.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes())[:-20])
    with pytest.raises(DataError, match=r"kv.jsonl.gz:\d+: cannot be read"):
        _load(tmp_path, packed)


def test_fewer_keys_keep_the_gold_record_and_the_first_others(tmp_path: Path) -> None:
    kv_file(tmp_path / "kv.jsonl", records=1, pairs=10, gold=7)
    row = json.loads((tmp_path / "kv.jsonl").read_text())
    items = _load(tmp_path, _spec(keys=5, positions=[0, -1]))
    for item, index in zip(items, (0, 4), strict=True):
        shown = re.findall(r'"([0-9a-f-]{36})": "([0-9a-f-]{36})"', item.contexts[0])
        others = [tuple(kv) for kv in row["ordered_kv_records"][:4]]
        assert len(shown) == 5 and shown[index] == (row["key"], row["value"])
        assert [kv for kv in shown if kv[0] != row["key"]] == others
    with pytest.raises(DataError, match=r"params\.keys = 11, but the record has 10 keys"):
        _load(tmp_path, _spec(keys=11))


@pytest.mark.parametrize(
    "params",
    [{"keys": 0}, {"keys": "5"}, {"max_new_tokens": -1}, {"max_new_tokens": 10**9},
     {"positions": 3}, {"positions": [1.5]}, {"keys": True}],
)  # fmt: skip
def test_params_out_of_range_are_refused(tmp_path: Path, params: dict) -> None:
    kv_file(tmp_path / "kv.jsonl", records=1, pairs=10, gold=0)
    with pytest.raises(ConfigError, match=rf"params\.{next(iter(params))}"):
        _load(tmp_path, _spec(**params))
