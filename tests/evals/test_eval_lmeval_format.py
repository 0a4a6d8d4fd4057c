"""`format = "lm_eval"`: lm-eval builds the task's requests, our scorer scores them; the result
equals the `archaudit` lm-eval model's on the same task, per item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_helpers import tiny_archaudit_lm

from archaudit.errors import ConfigError
from archaudit.evals import evaluate

adapter = pytest.importorskip("archaudit.evals.lmeval_adapter")


def _toy(tmp_path: Path) -> Path:
    rows = [
        {"query": f"Question: what is {k} plus one?", "choices": [str(k + 1), "blue sky", "x"],
         "gold": k % 3}
        for k in range(8)
    ]  # fmt: skip
    data = tmp_path / "toy.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    adapter.write_task_yaml(tmp_path / "lm_tasks", "toy_mc", data, "\nAnswer:")
    return data


def test_lm_eval_format_equals_the_adapter_per_item(tmp_path: Path) -> None:
    _toy(tmp_path)
    model = tiny_archaudit_lm()
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[[tasks]]\nname = "toy"\nformat = "lm_eval"\nmetric = "acc_norm"\n'
        'params = { task = "toy_mc", include = "lm_tasks" }\n'
    )
    ours = evaluate(model, suite, data_root=tmp_path, show_progress=False).tasks["toy"]
    harness = adapter.run_local_task(
        adapter.ArchauditHarnessLM(model=model), "toy_mc", tmp_path / "lm_tasks"
    )
    samples = sorted(harness["samples"]["toy_mc"], key=lambda s: s["doc_id"])
    assert [item.id for item in ours.items] == [f"toy/{s['doc_id']}" for s in samples]
    for sample, item in zip(samples, ours.items, strict=True):
        assert item.gold == sample["target"] or str(item.gold) == str(sample["target"])
        theirs = [float(r[0]) for r in sample["filtered_resps"]]
        assert theirs == pytest.approx(list(item.logprobs), abs=1e-4)
        assert (sample["acc"], sample["acc_norm"]) == (item.correct, item.correct_norm)
    assert harness["results"]["toy_mc"]["acc,none"] == pytest.approx(ours.acc.value)
    assert harness["results"]["toy_mc"]["acc_norm,none"] == pytest.approx(ours.acc_norm.value)


def test_lm_eval_format_names_bad_params(tmp_path: Path) -> None:
    _toy(tmp_path)
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[[tasks]]\nname = "toy"\nformat = "lm_eval"\n'
        'params = { tsk = "toy_mc", include = "lm_tasks" }\n'
    )
    with pytest.raises(ConfigError, match=r"task is required.*unknown: 'tsk'"):
        evaluate(tiny_archaudit_lm(), suite, data_root=tmp_path, show_progress=False)
