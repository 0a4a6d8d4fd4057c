"""The lm-evaluation-harness adapter: lm-eval's task pipeline over our scorer agrees with ours."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from eval_helpers import reference_logprob, tiny_archaudit_lm

from archaudit.evals import evaluate


def test_adapter_agrees_with_our_scorer_on_the_same_items(tmp_path: Path) -> None:
    adapter = pytest.importorskip("archaudit.evals.lmeval_adapter")
    rows = [
        {
            "query": f"Question: what is {k} plus one?",
            "choices": [str(k + 1), "blue sky", "x"],
            "gold": 0,
        }
        for k in range(12)
    ]
    data = tmp_path / "toy.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    adapter.write_task_yaml(tmp_path, "toy_mc", data, "\nAnswer:")
    model = tiny_archaudit_lm()

    harness = adapter.run_local_task(adapter.ArchauditHarnessLM(model=model), "toy_mc", tmp_path)
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[[tasks]]\nname = "toy_mc"\nformat = "multiple_choice"\npath = "toy.jsonl"\n'
        'prompt_suffix = "\\nAnswer:"\n'
    )
    ours = evaluate(model, suite, data_root=tmp_path, show_progress=False).tasks["toy_mc"]
    assert harness["results"]["toy_mc"]["acc,none"] == pytest.approx(ours.acc.value)
    assert harness["results"]["toy_mc"]["acc_norm,none"] == pytest.approx(ours.acc_norm.value)
    samples = sorted(harness["samples"]["toy_mc"], key=lambda s: s["doc_id"])
    for sample, item in zip(samples, ours.items, strict=True):
        theirs = [float(r[0]) for r in sample["filtered_resps"]]
        assert theirs == pytest.approx(list(item.logprobs), abs=1e-4)


def test_adapter_rolling_and_greedy_generation() -> None:
    adapter = pytest.importorskip("archaudit.evals.lmeval_adapter")
    model = tiny_archaudit_lm(context_length=16)
    harness = adapter.ArchauditHarnessLM(model=model)
    text = "a rolling window text that is longer than sixteen bytes"
    (total,) = harness.loglikelihood_rolling([SimpleNamespace(args=(text,))])
    ids = model.encode(text)
    # lm-eval's own windows; the byte tokenizer has no prefix token, so the first byte
    # conditions the first window (lm-eval's prefix slot) and is context only.
    from lm_eval.utils import get_rolling_token_windows, make_disjoint_window

    rolling = get_rolling_token_windows(ids[1:], ids[0], 16, 1)
    windows = [make_disjoint_window(w) for w in rolling]
    assert total == pytest.approx(sum(reference_logprob(model, *w)[0] for w in windows), abs=1e-4)

    context = "abc"
    (generated,) = harness.generate_until([SimpleNamespace(args=(context, {"max_gen_toks": 4}))])
    expected = list(model.encode(context))
    for _ in range(4):  # greedy decoding with the raw module
        expected.append(int(model.model(torch.tensor([expected]))[0, -1].argmax()))
    assert generated == model.decode(expected[3:])


@pytest.mark.slow
def test_the_documented_command_line_runs_on_a_run_directory(tmp_path: Path) -> None:
    """docs/evals.md's command, batch size in --model_args and no --device: lm-eval's own
    --batch_size default must not collide with it, and no CUDA is assumed."""
    import os
    import subprocess
    import sys

    adapter = pytest.importorskip("archaudit.evals.lmeval_adapter")
    from archaudit.config import ModelConfig, Recipe
    from archaudit.train import train

    run = tmp_path / "run"
    model = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=64)
    train(model, Recipe(steps=2, batch_tokens=256, corpus_chars=50_000, threads=1), run)
    rows = [{"query": f"what is {k} plus one?", "choices": [str(k + 1), "x"], "gold": 0}
            for k in range(4)]  # fmt: skip
    data = tmp_path / "toy.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    adapter.write_task_yaml(tmp_path / "tasks", "toy_mc", data, "\nAnswer:")
    cmd = [
        sys.executable, "-m", "archaudit.evals.lmeval_adapter", "--model", "archaudit",
        "--model_args", f"path={run},batch_size=8", "--include_path", str(tmp_path / "tasks"),
        "--tasks", "toy_mc", "--limit", "4", "--output_path", str(tmp_path / "out"),
    ]  # fmt: skip
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    results = [json.loads(p.read_text()) for p in (tmp_path / "out").rglob("results*.json")]
    assert results and 0.0 <= results[0]["results"]["toy_mc"]["acc,none"] <= 1.0
