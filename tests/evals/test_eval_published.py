"""Benchmarks in their published formats (PIQA's release, TruthfulQA's mc_task.json), MC2,
the continuous per-item metrics, the at-chance flag, and checks made before a model loads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from eval_helpers import tiny_archaudit_lm

from archaudit.errors import ConfigError, DataError
from archaudit.evals import TaskSpec, evaluate, load_suite, score_task
from archaudit.evals.tasks import LoadContext, load_items, mc2

PIQA = [
    {"goal": "Open a jar", "sol1": "twist the lid", "sol2": "eat the lid"},
    {"goal": "Dry hair", "sol1": "use a fork", "sol2": "use a towel"},
    {"goal": "Cut bread", "sol1": "use a knife", "sol2": "use a spoon"},
]
TQA = [
    {"question": "Is the sky green?", "mc1_targets": {"No": 1, "Yes": 0, "Often": 0}},
    {"question": "What do cats eat?", "mc2_targets": {"Fish": 1, "Mice": 1, "Rocks": 0}},
]
PIQA_TABLE = """
[[tasks]]
name = "piqa"
format = "multiple_choice"
path = "piqa/valid.jsonl"
labels = "piqa/valid-labels.lst"
fields = { choices = ["sol1", "sol2"] }
prompt = "Question: {goal}\\nAnswer:"
metric = "acc_norm"
"""


def _piqa_root(tmp_path: Path, labels: str = "0\n1\n0\n") -> Path:
    folder = tmp_path / "piqa"
    folder.mkdir(exist_ok=True)
    (folder / "valid.jsonl").write_text("".join(json.dumps(r) + "\n" for r in PIQA))
    (folder / "valid-labels.lst").write_text(labels)
    return tmp_path


def _suite(tmp_path: Path, text: str, name: str = "suite") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def _items(root: Path, limit: int | None = None, **spec) -> list:
    task = TaskSpec(name="t", format="multiple_choice", **spec)
    return load_items(task, LoadContext(data_root=root, limit=limit, model=None))


def test_piqa_from_its_published_files(tmp_path: Path) -> None:
    root = _piqa_root(tmp_path)
    (spec,) = load_suite(_suite(tmp_path, PIQA_TABLE)).tasks
    items = load_items(spec, LoadContext(data_root=root, limit=None, model=None))
    assert [i.gold for i in items] == [0, 1, 0]
    assert items[1].requests("", " ") == [
        ("Question: Dry hair\nAnswer:", " use a fork"),
        ("Question: Dry hair\nAnswer:", " use a towel"),
    ]


@pytest.mark.parametrize(
    ("labels", "limit", "match"),
    [
        ("0\n1\n", None, "holds 2 labels but .*valid.jsonl has 3 records"),
        ("0\n1\n0\n1\n", None, "holds 4 labels but .*valid.jsonl has 3 records"),
        ("0\nx\n0\n", None, r"valid-labels.lst:2: label 'x' is not an integer"),
        ("0\n2\n0\n", None, r"valid-labels.lst:2: label 2 is out of range for 2 choices"),
    ],
)
def test_labels_file_errors_name_the_file_and_line(
    tmp_path: Path, labels: str, limit: int | None, match: str
) -> None:
    root = _piqa_root(tmp_path, labels)
    (spec,) = load_suite(_suite(tmp_path, PIQA_TABLE)).tasks
    with pytest.raises(DataError, match=match):
        load_items(spec, LoadContext(data_root=root, limit=limit, model=None))


def test_a_limit_reads_only_the_labels_it_needs(tmp_path: Path) -> None:
    root = _piqa_root(tmp_path, "1\n0\n")
    (spec,) = load_suite(_suite(tmp_path, PIQA_TABLE)).tasks
    items = load_items(spec, LoadContext(data_root=root, limit=2, model=None))
    assert [i.gold for i in items] == [1, 0]


def test_prompt_placeholder_missing_names_the_field(tmp_path: Path) -> None:
    root = _piqa_root(tmp_path)
    with pytest.raises(DataError, match=r"valid.jsonl:1: .* names \{gaol\}.*did you mean 'goal'"):
        _items(
            root,
            path="piqa/valid.jsonl",
            labels="piqa/valid-labels.lst",
            fields={"choices": ["sol1", "sol2"]},
            prompt="Question: {gaol}",
        )


def test_answer_label_tables_give_true_choices_and_a_json_list_reads(tmp_path: Path) -> None:
    (tmp_path / "mc_task.json").write_text(json.dumps(TQA))
    mc1 = _items(
        tmp_path,
        limit=1,
        path="mc_task.json",
        fields={"choices": "mc1_targets", "query": "question"},
    )
    assert mc1[0].continuations == ("No", "Yes", "Often") and mc1[0].true_choices == (0,)
    (tmp_path / "mc2.json").write_text(json.dumps(TQA[1:]))
    (item,) = _items(
        tmp_path, path="mc2.json", fields={"choices": "mc2_targets"}, prompt="Q: {question}\nA:"
    )
    assert item.true_choices == (0, 1) and item.contexts == ("Q: What do cats eat?\nA:",)
    assert item.id == "mc2:1"


def test_answer_table_without_a_true_answer_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps([{"q": "?", "c": {"a": 0, "b": 0}}]))
    with pytest.raises(DataError, match=r"bad.json:1: field 'c' labels no answer 1"):
        _items(tmp_path, path="bad.json", fields={"query": "q", "choices": "c"})


def test_labels_on_a_generated_or_gold_free_format_are_refused(tmp_path: Path) -> None:
    suite = "[[tasks]]\nname = 'b'\nformat = 'minimal_pairs'\npath = 'x'\nlabels = 'y'\n"
    with pytest.raises(ConfigError, match="has no gold label; remove `labels`"):
        load_suite(_suite(tmp_path, suite))


@pytest.mark.parametrize(
    ("logprobs", "true", "expected"),
    [
        ([math.log(0.5), math.log(0.3), math.log(0.2)], [0, 1], 0.8),
        ([-1.0, -2.0, -3.0], [0], math.exp(-1) / (math.exp(-1) + math.exp(-2) + math.exp(-3))),
        ([-700.0, -701.0], [1], 1 / (1 + math.e)),  # far below exp's range: still exact
        ([-2.0, -2.0, -2.0, -2.0], [1, 3], 0.5),
    ],
)
def test_mc2_by_hand(logprobs: list[float], true: list[int], expected: float) -> None:
    assert mc2(logprobs, true) == pytest.approx(expected, rel=1e-12)


def test_mc2_matches_lm_eval_process_results_mc2() -> None:
    utils = pytest.importorskip("lm_eval.tasks.truthfulqa.utils")
    import random

    rng = random.Random(0)
    for _ in range(20):
        n = rng.randint(2, 12)
        logprobs = [rng.uniform(-40.0, -2.0) for _ in range(n)]
        labels = [1] * rng.randint(1, n - 1)
        labels += [0] * (n - len(labels))
        doc = {"mc2_targets": {"labels": labels}}
        theirs = utils.process_results_mc2(doc, [(lp, False) for lp in logprobs])["acc"]
        ours = mc2(logprobs, [i for i, label in enumerate(labels) if label])
        assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)


def test_mc2_task_and_continuous_metrics_per_item(tmp_path: Path) -> None:
    (tmp_path / "mc2.json").write_text(json.dumps(TQA[1:] * 3))
    model = tiny_archaudit_lm()
    spec = TaskSpec(
        name="tqa", format="multiple_choice", path="mc2.json", metric="mc2",
        fields={"choices": "mc2_targets", "query": "question"},
    )  # fmt: skip
    items = load_items(spec, LoadContext(data_root=tmp_path, limit=None, model=None))
    result = score_task(model, spec, items, show_progress=False)
    for item in result.items:
        lp = item.logprobs
        assert item.mc2 == pytest.approx(mc2(lp, [0, 1]))
        assert item.margin == pytest.approx(max(lp[0], lp[1]) - lp[2])
        assert item.gold_bpb == pytest.approx(-lp[0] / math.log(2) / len(" Fish"))
    assert result.score == pytest.approx(sum(i.mc2 for i in result.items) / 3)
    assert result.chance == pytest.approx(2 / 3)
    assert result.bpb == pytest.approx(result.items[0].gold_bpb)


def test_a_task_at_chance_is_flagged_and_left_out_of_downstream_avg(tmp_path: Path) -> None:
    """An untrained model: a cloze task at the floor, minimal pairs it cannot miss (the bad
    sentence is the good one with noise appended, so it is always less likely)."""
    good = [f"the cat number {k} sat." for k in range(30)]
    pairs = [{"sentence_good": g, "sentence_bad": g + " qx zv jk wq xz"} for g in good]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    cloze = [{"context": g, "continuation": "zqxjv wkpfy"} for g in good]
    (tmp_path / "cloze.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cloze))
    suite = _suite(
        tmp_path,
        "[[tasks]]\nname = 'pairs'\nformat = 'minimal_pairs'\npath = 'pairs.jsonl'\n"
        "[[tasks]]\nname = 'cloze'\nformat = 'language_modeling'\npath = 'cloze.jsonl'\n",
    )
    result = evaluate(tiny_archaudit_lm(), suite, data_root=tmp_path, show_progress=False)
    assert result.tasks["cloze"].at_chance and not result.tasks["pairs"].at_chance
    assert result.downstream_avg == result.tasks["pairs"].score == 1.0
    metrics = result.metrics
    assert metrics["cloze/at_chance"] == 1.0 and metrics["downstream_tasks"] == 1.0
    assert metrics["downstream_avg_all"] == pytest.approx(0.5)
    assert metrics["downstream_bpb"] == pytest.approx(
        (result.tasks["pairs"].bpb + result.tasks["cloze"].bpb) / 2
    )
    assert json.loads(result.to_json())["excluded"] == {"cloze": 0.0}
    alone = _suite(tmp_path, suite.read_text().split("[[tasks]]")[-1].join(["[[tasks]]", ""]), "c")
    floor = evaluate(tiny_archaudit_lm(), alone, data_root=tmp_path, show_progress=False)
    assert floor.metrics["downstream_tasks"] == 0.0  # every task at chance: all averaged
    assert floor.downstream_avg == floor.tasks["cloze"].score == 0.0


def test_data_is_checked_before_the_model_loads(tmp_path: Path) -> None:
    """A missing data file (or held-out text) fails first, even with a model that does not
    exist: the check no longer waits for a model load."""
    root = _piqa_root(tmp_path)
    (root / "piqa" / "valid-labels.lst").unlink()
    suite = _suite(tmp_path, PIQA_TABLE)
    with pytest.raises(DataError, match=r"labels file .*valid-labels.lst not found"):
        evaluate(tmp_path / "no-such-model", suite, data_root=root, show_progress=False)
    heldout = _suite(tmp_path, '[heldout]\npath = "missing.txt"\n', name="heldout")
    with pytest.raises(DataError, match=r"held-out text .*missing.txt not found"):
        evaluate(tmp_path / "no-such-model", heldout, data_root=root, show_progress=False)
    with pytest.raises(DataError, match="no-such-model"):  # good data: the model is next
        _piqa_root(tmp_path)
        evaluate(tmp_path / "no-such-model", suite, data_root=root, show_progress=False)


def test_a_suite_with_only_heldout(tmp_path: Path) -> None:
    (tmp_path / "text.txt").write_text("some held-out text to score, long enough. " * 8)
    suite = _suite(tmp_path, '[heldout]\npath = "text.txt"\nstride = 16\n')
    result = evaluate(tiny_archaudit_lm(), suite, data_root=tmp_path, show_progress=False)
    assert result.tasks == {} and "downstream_avg" not in result.metrics
    held = result.heldout
    assert (held.window, held.stride, held.context) == (64, 16, 49)
    assert result.metrics["heldout/stride"] == 16.0
    with pytest.raises(
        ConfigError, match="at least one \\[\\[tasks\\]\\] table or a \\[heldout\\]"
    ):
        load_suite(_suite(tmp_path, 'name = "empty"\n'))
