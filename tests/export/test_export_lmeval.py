"""lm-eval's own `hf` model on an export scores every item as the `archaudit` adapter scores the
run it came from (slow: two lm-eval task runs on a tiny model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")
adapter = pytest.importorskip("archaudit.evals.lmeval_adapter")


@pytest.mark.slow
def test_lmeval_hf_on_the_export_equals_the_adapter_on_the_run(tmp_path: Path) -> None:
    from test_export_hf import _run

    from archaudit.export import export_hf

    run = _run(tmp_path, "qk_norm", "bpe:300", context=128)
    export_hf(run, tmp_path / "hf")
    rows = [
        {"query": f"Question: what comes after {k}?", "choices": [str(k + 1), "a cat", "blue"],
         "gold": 0}
        for k in range(10)
    ]  # fmt: skip
    data = tmp_path / "toy.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    adapter.write_task_yaml(tmp_path / "tasks", "toy_mc", data, "\nAnswer:")
    ours = adapter.run_local_task(
        "archaudit", "toy_mc", tmp_path / "tasks", model_args=f"path={run},device=cpu"
    )
    theirs = adapter.run_local_task(
        "hf", "toy_mc", tmp_path / "tasks",
        model_args=f"pretrained={tmp_path / 'hf'},dtype=float32,device=cpu", batch_size=4,
    )  # fmt: skip
    ours_items = sorted(ours["samples"]["toy_mc"], key=lambda s: s["doc_id"])
    theirs_items = sorted(theirs["samples"]["toy_mc"], key=lambda s: s["doc_id"])
    assert len(ours_items) == len(theirs_items) == 10
    for a, b in zip(ours_items, theirs_items, strict=True):
        assert a["arguments"] == b["arguments"]  # the same prompts, tokenised alike
        mine = [float(r[0]) for r in a["filtered_resps"]]
        assert [float(r[0]) for r in b["filtered_resps"]] == pytest.approx(mine, abs=1e-4)
    assert ours["results"]["toy_mc"]["acc,none"] == theirs["results"]["toy_mc"]["acc,none"]
