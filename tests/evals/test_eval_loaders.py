"""Benchmark formats: what each yields, and one named error per malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_helpers import tiny_archaudit_lm

from archaudit.errors import ConfigError, DataError
from archaudit.evals import TaskSpec, evaluate, load_suite
from archaudit.evals.tasks import LoadContext, load_items

MC_ROWS = [
    {"query": "Question: 2+2?", "choices": ["4", "five"], "gold": 0},
    {"query": "Question: sky?", "choices": ["blue", "green", "red"], "gold": 2},
]


def _jsonl(path: Path, rows: list, raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) for r in rows]
    for number, text in (raw_lines or {}).items():
        lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")
    return path


def _load(tmp_path: Path, fmt: str, path: str, limit: int | None = None, **spec) -> list:
    task = TaskSpec(name="t", format=fmt, path=path, **spec)
    context = LoadContext(data_root=tmp_path, limit=limit, model=tiny_archaudit_lm())
    return load_items(task, context)


def test_multiple_choice_items(tmp_path: Path) -> None:
    _jsonl(tmp_path / "mc.jsonl", MC_ROWS)
    items = _load(tmp_path, "multiple_choice", "mc.jsonl")
    assert [i.gold for i in items] == [0, 2]
    assert items[1].requests("\nAnswer:", " ") == [
        ("Question: sky?\nAnswer:", " blue"),
        ("Question: sky?\nAnswer:", " green"),
        ("Question: sky?\nAnswer:", " red"),
    ]
    assert items[0].id == "mc:1" and items[1].id == "mc:2"


def test_schema_and_language_modeling_items(tmp_path: Path) -> None:
    _jsonl(
        tmp_path / "s.jsonl",
        [{"context_options": ["A so A", "A so B"], "continuation": "won.", "gold": 1}],
    )
    _jsonl(tmp_path / "lm.jsonl", [{"context": "the last", "continuation": "word"}])
    (schema,) = _load(tmp_path, "schema", "s.jsonl")
    assert schema.requests("", " ") == [("A so A", " won."), ("A so B", " won.")]
    (cloze,) = _load(tmp_path, "language_modeling", "lm.jsonl")
    assert cloze.requests("", " ") == [("the last", " word")]


def test_minimal_pairs_blimp_fields_and_zorro_line_pairs(tmp_path: Path) -> None:
    _jsonl(tmp_path / "b.jsonl", [{"sentence_good": "Cats run.", "sentence_bad": "Cats runs."}])
    (pair,) = _load(tmp_path, "minimal_pairs", "b.jsonl")
    assert pair.requests("", " ") == [("", " Cats run."), ("", " Cats runs.")] and pair.gold == 0
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "p.txt").write_text("bad one .\ngood one .\nbad two .\ngood two .\n")
    items = _load(tmp_path, "zorro", "z")
    assert [i.continuations for i in items] == [
        ("good one .", "bad one ."),
        ("good two .", "bad two ."),
    ]
    assert [i.id for i in items] == ["p:2", "p:4"]


def test_generic_jsonl_by_field_mapping_in_toml(tmp_path: Path) -> None:
    _jsonl(tmp_path / "mine.jsonl", [{"question": "Q?", "options": ["a", "b"], "label": 1}])
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[[tasks]]\nname = "mine"\nformat = "multiple_choice"\npath = "mine.jsonl"\n'
        'fields = { query = "question", choices = "options", gold = "label" }\n'
    )
    result = evaluate(tiny_archaudit_lm(), suite, data_root=tmp_path, show_progress=False)
    (item,) = result.tasks["mine"].items
    assert item.gold == 1 and len(item.logprobs) == 2


def test_limit_spreads_over_files(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    for name in ("a", "b", "c"):
        _jsonl(
            tmp_path / "d" / f"{name}.jsonl",
            [{"sentence_good": f"{name}{k}", "sentence_bad": "x"} for k in range(5)],
        )
    items = _load(tmp_path, "minimal_pairs", "d", limit=6)
    assert [i.group for i in items] == ["a", "a", "b", "b", "c", "c"]


@pytest.mark.parametrize(
    ("rows", "raw", "spec", "message"),
    [
        (
            MC_ROWS * 2,
            {3: '{"query": "Q", "choices": ["a", "b"], "gold": 0'},
            {},
            r"mc\.jsonl:3: bad JSON",
        ),
        ([MC_ROWS[0], {"query": "Q", "gold": 0}], {}, {}, r"mc\.jsonl:2: missing field 'choices'"),
        (
            [MC_ROWS[0], {"query": "Q", "choices": ["a", "b"], "gold": 2}],
            {},
            {},
            r"mc\.jsonl:2: field 'gold' = 2 is out of range",
        ),
        (
            [{"query": "Q", "choices": "ab", "gold": 0}],
            {},
            {},
            r"mc\.jsonl:1: field 'choices' must be a list",
        ),
        (
            [{"q": "Q", "choices": ["a", "b"], "gold": 0}],
            {},
            {"fields": {"query": "question"}},
            r"mc\.jsonl:1: missing field 'question'",
        ),
        ([[1, 2]], {}, {}, r"mc\.jsonl:1: expected a JSON object"),
    ],
    ids=[
        "bad-json",
        "missing-field",
        "gold-out-of-range",
        "choices-not-list",
        "mapped-field-missing",
        "not-object",
    ],
)
def test_malformed_rows_name_file_line_and_field(tmp_path, rows, raw, spec, message) -> None:
    _jsonl(tmp_path / "mc.jsonl", rows, raw)
    with pytest.raises(DataError, match=message):
        _load(tmp_path, "multiple_choice", "mc.jsonl", **spec)


def test_empty_task_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(DataError, match=r"no items.*refusing to score an empty task"):
        _load(tmp_path, "multiple_choice", "empty.jsonl")


def test_zorro_odd_line_count_is_refused(tmp_path: Path) -> None:
    (tmp_path / "z.txt").write_text("bad .\ngood .\nbad alone .\n")
    with pytest.raises(DataError, match=r"z\.txt:3: odd number of lines"):
        _load(tmp_path, "zorro", "z.txt")


def test_missing_data_names_the_path_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no data at .*nothere\.jsonl.*ARCHAUDIT_DATA"):
        _load(tmp_path, "multiple_choice", "nothere.jsonl")


def test_unknown_format_metric_and_field_fail_with_did_you_mean(tmp_path: Path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text('[[tasks]]\nname = "x"\nformat = "multiple_choise"\npath = "x"\n')
    with pytest.raises(
        ConfigError, match=r"unknown task format 'multiple_choise'.*did you mean 'multiple_choice'"
    ):
        load_suite(suite)
    suite.write_text('[[tasks]]\nname = "x"\nformat = "schema"\nmetric = "acc_norm"\n')
    with pytest.raises(ConfigError, match="metric 'acc_norm' is not reported by format 'schema'"):
        load_suite(suite)
    suite.write_text('[[tasks]]\nname = "x"\nformat = "probe"\npath = "x.jsonl"\n')
    with pytest.raises(ConfigError, match="format 'probe' generates its items; remove `path`"):
        load_suite(suite)
    suite.write_text('[[tasks]]\nname = "x"\nformat = "zorro"\nparams = { seed = 1 }\n')
    with pytest.raises(ConfigError, match="format 'zorro' reads a file and takes no `params`"):
        load_suite(suite)
    suite.write_text('[[tasks]]\nname = "x"\nformat = "schema"\nfields = { context = "c" }\n')
    with pytest.raises(
        ConfigError, match=r"has no field 'context'.*did you mean 'context_options'"
    ):
        load_suite(suite)
