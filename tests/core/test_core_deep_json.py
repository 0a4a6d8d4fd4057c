"""Issue 57, item 10: a JSON array nested thousands deep in a level, probe or token-cache entry
(or any JSON file archaudit reads) gave a RecursionError traceback. Every JSON file is parsed by
one loader (`files.parse_json`) that counts the nesting first and refuses past
`MAX_JSON_DEPTH` in one line naming the file; a cache entry is then recomputed with that line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archaudit.config import Recipe
from archaudit.data.corpus import prepare_corpus
from archaudit.errors import DataError
from archaudit.files import MAX_JSON_DEPTH, json_depth, parse_json, read_json
from archaudit.stats.simulation.disk_cache import cached

DEEP = "[" * 100_000 + "]" * 100_000
"""Deep enough for Python's parser (its recursion limit) and for anything walking the value."""


def deep_entry(path: Path) -> None:
    """A cache entry whose value is the deep array (key and checksum as a writer would put)."""
    entry = json.loads(path.read_text())
    path.write_text(json.dumps({**entry, "value": None}).replace("null", DEEP))


@pytest.mark.parametrize(
    ("text", "depth"),
    [("3", 0), ("{}", 1), ('[1, {"a": "[[[\\"[["}]', 2), ('["\\\\", [[{}]]]', 4),
     ("[[", 2), (DEEP, MAX_JSON_DEPTH + 1)],
)  # fmt: skip
def test_the_depth_is_counted_without_parsing_and_strings_do_not_count(text: str, depth: int):
    assert json_depth(text) == depth


@pytest.mark.parametrize("text", [DEEP, "[" * 100_000, '{"a": ' * 5000 + "1" + "}" * 5000])
def test_a_deep_file_is_one_line_naming_it(tmp_path: Path, text: str):
    path = tmp_path / "record.json"
    path.write_text(text)
    with pytest.raises(DataError) as refused:
        read_json(path)
    (line,) = str(refused.value).splitlines()
    assert line.startswith(f"{path} is not valid JSON"), line
    shallow = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json_depth(json.dumps(parse_json(shallow.encode(), path))) == MAX_JSON_DEPTH


def test_a_deep_level_entry_is_recomputed_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path))
    fields = {"design": "deep"}

    def parse(value: object) -> float:
        if not isinstance(value, float):
            raise ValueError(value)
        return value

    assert cached("level", fields, lambda: 0.01, parse) == 0.01
    (path,) = (tmp_path / "stats").glob("level-*.json")
    deep_entry(path)
    assert cached("level", fields, lambda: 0.01, parse) == 0.01
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(path) in line and "recomputed" in line, line


def test_a_deep_probe_entry_is_measured_again(tmp_path, monkeypatch, capsys):
    from archaudit.audit.planning import probe

    monkeypatch.setenv("ARCHAUDIT_CACHE", str(tmp_path))
    honest = {"wall": 0.25, "cpu": 0.5}
    key = {"machine": "m", "part": "deep"}
    assert probe.cached(key, "a step", lambda: dict(honest)) == honest
    (path,) = (tmp_path / "probes").glob("*.json")
    deep_entry(path)
    assert probe.cached(key, "a step", lambda: dict(honest)) == honest
    err = capsys.readouterr().err
    assert str(path) in err and "measured again" in err and "Traceback" not in err


def test_a_deep_token_cache_meta_is_rebuilt(tmp_path, capsys):
    recipe = Recipe(corpus_chars=20_000)
    first = prepare_corpus(recipe, cache=tmp_path)
    honest = bytes(first.train)
    (folder,) = (tmp_path / "tokens").iterdir()
    (folder / "meta.json").write_text(DEEP)
    capsys.readouterr()
    again = prepare_corpus(recipe, cache=tmp_path)
    assert bytes(again.train) == honest
    err = capsys.readouterr().err
    assert str(folder) in err and "rebuilt" in err and "Traceback" not in err
