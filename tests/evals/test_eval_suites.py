"""Suites: built-ins, the macro average, per-item outputs, and suite-file errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_helpers import tiny_archaudit_lm

from archaudit.errors import ConfigError
from archaudit.evals import FORMATS, builtin_suites, evaluate, load_suite, wilson
from archaudit.evals.loaders import task_files
from archaudit.evals.tasks import LoadContext

REAL_SMALL = {
    "blimp",
    "zorro",
    "lambada",
    "piqa",
    "arc_easy",
    "arc_challenge",
    "winogrande",
    "copa",
    "boolq",
    "openbookqa",
}


def test_builtin_suites_parse_and_cover_the_issue() -> None:
    assert {"demo", "real-small"} <= set(builtin_suites())
    assert {t.name for t in load_suite("real-small").tasks} == REAL_SMALL
    demo = load_suite("demo")
    assert {t.format for t in demo.tasks} == {"agreement", "probe", "long_context"}
    assert all(t.format in FORMATS for t in demo.tasks)


def test_real_small_data_files_exist(shared_data: Path) -> None:
    model = tiny_archaudit_lm()
    for spec in load_suite("real-small").tasks:
        suffix = ".txt" if spec.format == "zorro" else ".jsonl"
        assert task_files(spec, LoadContext(data_root=shared_data, limit=1, model=model), suffix)


def _suite(tmp_path: Path) -> Path:
    rows = [{"query": f"Q{k}:", "choices": ["yes", "no", "maybe"], "gold": k % 3} for k in range(9)]
    (tmp_path / "mc.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "lm.jsonl").write_text(json.dumps({"context": "abc", "continuation": "d"}))
    path = tmp_path / "suite.toml"
    path.write_text(
        'name = "mini"\n'
        '[[tasks]]\nname = "mc"\nformat = "multiple_choice"\npath = "mc.jsonl"\n'
        'metric = "acc_norm"\n'
        '[[tasks]]\nname = "lm"\nformat = "language_modeling"\npath = "lm.jsonl"\n'
        '[[tasks]]\nname = "induction"\nformat = "probe"\nlimit = 5\n'
    )
    return path


def test_macro_average_and_per_item_outputs(tmp_path: Path) -> None:
    out = tmp_path / "evals.json"
    result = evaluate(
        tiny_archaudit_lm(),
        _suite(tmp_path),
        data_root=tmp_path,
        out_path=out,
        show_progress=False,
    )
    saved = json.loads(out.read_text())
    per_task = {}
    for name, task in saved["tasks"].items():
        key = "correct_norm" if task["metric"] == "acc_norm" else "correct"
        flags = [item[key] for item in task["items"]]
        per_task[name] = sum(flags) / len(flags)
        assert (task[task["metric"]]["low"], task[task["metric"]]["high"]) == pytest.approx(
            wilson(sum(flags), len(flags))
        )
    assert saved["metrics"]["downstream_avg_all"] == pytest.approx(sum(per_task.values()) / 3)
    informative = [per_task[n] for n, t in saved["tasks"].items() if not t["at_chance"]]
    informative = informative or list(per_task.values())  # all at chance: all averaged
    assert saved["metrics"]["downstream_avg"] == pytest.approx(sum(informative) / len(informative))
    assert saved["excluded"] == {
        n: per_task[n] for n, t in saved["tasks"].items() if t["at_chance"]
    }
    assert result.metrics["downstream_avg"] == pytest.approx(saved["metrics"]["downstream_avg"])
    mc_items = saved["tasks"]["mc"]["items"]
    assert [i["id"] for i in mc_items] == [f"mc:{k}" for k in range(1, 10)]
    for item in mc_items:  # predicted is the argmax of the saved log-likelihoods
        assert item["predicted"] == max(range(3), key=item["logprobs"].__getitem__)
        assert item["correct"] == (item["predicted"] == item["gold"])


def test_limit_overrides_and_results_are_deterministic(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    first = evaluate(tiny_archaudit_lm(), suite, limit=4, data_root=tmp_path, show_progress=False)
    again = evaluate(tiny_archaudit_lm(), suite, limit=4, data_root=tmp_path, show_progress=False)
    assert [t.acc.n for t in first.tasks.values()] == [4, 1, 4]
    assert first.to_dict()["tasks"] == again.to_dict()["tasks"]


def test_data_root_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = _suite(tmp_path)
    monkeypatch.setenv("ARCHAUDIT_DATA", str(tmp_path))
    assert evaluate(tiny_archaudit_lm(), suite, show_progress=False).tasks["mc"].acc.n == 9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'nmae = "x"\n[[tasks]]\nname = "a"\nformat = "probe"\n',
            "unknown key 'nmae'.*did you mean 'name'",
        ),
        ('name = "x"\n', "at least one \\[\\[tasks\\]\\]"),
        (
            '[[tasks]]\nname = "a"\nformat = "probe"\n[[tasks]]\nname = "a"\nformat = "probe"\n',
            "unique; repeated: a",
        ),
        (
            '[[tasks]]\nname = "a"\nformat = "probe"\nlimt = 3\n',
            "unknown key .*limt.*did you mean 'limit'",
        ),
        ('[[tasks]]\nname = "a"\nformat = "probe"\nlimit = "many"\n', "limit = 'many' must be"),
    ],
)
def test_bad_suite_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_suite(path)


def test_unknown_suite_name() -> None:
    with pytest.raises(ConfigError, match=r"unknown suite 'real-smal'.*did you mean 'real-small'"):
        load_suite("real-smal")


def test_an_out_path_in_a_missing_folder_is_refused_before_scoring(tmp_path: Path) -> None:
    """Issue 44: `eval --out nodir/x.json` scored everything and then failed on the folder."""
    from archaudit.errors import DataError

    class Untouchable:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"the model was used ({name}) before the --out check")

    with pytest.raises(DataError, match="does not exist; create it"):
        evaluate(Untouchable(), _suite(tmp_path), data_root=tmp_path,
                 out_path=tmp_path / "nodir" / "x.json", show_progress=False)  # fmt: skip
