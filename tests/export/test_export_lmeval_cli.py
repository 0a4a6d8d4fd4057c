"""Issue 36, must-show 4: lm-eval's own command line on archaudit's outputs (slow: each runs
lm-eval in a fresh process). `lm_eval --model hf` on an export of the default tiny preset (a
byte tokenizer, which has no special token of its own: the export's BOS/EOS/pad is the NUL
byte), and `lm_eval --model archaudit --tasks <yaml>` through the `!function` hook that
`write_task_yaml` writes beside the task, with no other setup. Offline, local data only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
adapter = pytest.importorskip("archaudit.evals.lmeval_adapter")
pytestmark = pytest.mark.slow

SRC = str(Path(__file__).resolve().parents[2] / "src")
LM_EVAL = Path(sys.executable).with_name("lm_eval")


def _tiny_run(root: Path) -> Path:
    from archaudit.config import ModelConfig, Recipe
    from archaudit.presets import MODEL_PRESETS
    from archaudit.train import train

    recipe = Recipe(steps=2, batch_tokens=512, corpus_chars=20_000, device="cpu", eval_every=2,
                    checkpoint_every=2)  # fmt: skip
    assert train(ModelConfig(**MODEL_PRESETS["tiny"]), recipe, root / "run", seed=0).status == "ok"
    return root / "run"


def _task(root: Path) -> Path:
    rows = [{"query": f"What comes after {k}?", "choices": [str(k + 1), "a cat"], "gold": 0}
            for k in range(6)]  # fmt: skip
    data = root / "toy.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    return adapter.write_task_yaml(root / "tasks", "toy_mc", data, "\nAnswer:")


def _lm_eval(*argv: str, cwd: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    out = cwd / "lm_eval_out"
    done = subprocess.run(
        [str(LM_EVAL), *argv, "--device", "cpu", "--output_path", str(out)],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    (results,) = out.rglob("results_*.json")
    return json.loads(results.read_text())


def test_lm_eval_hf_runs_on_the_default_tiny_export(tmp_path: Path) -> None:
    from archaudit.export import export_hf

    export_hf(_tiny_run(tmp_path), tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["bos_token_id"] == config["eos_token_id"] == config["pad_token_id"] == 0
    task = _task(tmp_path)
    args = f"pretrained={tmp_path / 'hf'},dtype=float32"
    results = _lm_eval("--model", "hf", "--model_args", args, "--tasks", str(task),
                       "--batch_size", "2", cwd=tmp_path)  # fmt: skip
    assert 0 <= results["results"]["toy_mc"]["acc,none"] <= 1


def test_lm_eval_archaudit_runs_a_written_task_file(tmp_path: Path) -> None:
    run = _tiny_run(tmp_path)
    task = _task(tmp_path)
    assert "process_docs: !function archaudit_hook.process_docs" in task.read_text()
    results = _lm_eval("--model", "archaudit", "--model_args", f"path={run}", "--tasks",
                       str(task), cwd=tmp_path)  # fmt: skip
    assert results["results"]["toy_mc"]["sample_len"] == 6
    assert 0 <= results["results"]["toy_mc"]["acc,none"] <= 1
