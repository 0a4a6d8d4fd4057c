"""A real pretrained model (SmolLM2-135M-Instruct, 4-bit GGUF) on real benchmarks (slow set).

Must-show 1: BLiMP clearly above chance. Must-show 2: our scorer and lm-evaluation-harness
agree on acc and acc_norm for the same model and items, both through lm-eval's own `hf` model
(independent tokenisation and scoring) and through our `archaudit` adapter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_helpers import SHARED_DATA

from archaudit.evals import evaluate, load_scoring_model, load_suite

pytestmark = pytest.mark.slow

GGUF = "models/smollm2-135m-instruct-q4/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def smollm():
    if not (SHARED_DATA / GGUF).is_file():
        pytest.skip("../shared/data is absent")
    for module in ("transformers", "gguf", "accelerate"):
        pytest.importorskip(module)
    return SHARED_DATA, load_scoring_model(SHARED_DATA / GGUF)


def _task(name: str):
    return next(t for t in load_suite("real-small").tasks if t.name == name)


def _suite_of(names: list[str], tmp_path: Path, limit: int) -> Path:
    """A suite with real-small's own task tables for `names`."""
    lines = []
    for name in names:
        spec = _task(name)
        lines += [
            "[[tasks]]",
            f'name = "{spec.name}"',
            f'format = "{spec.format}"',
            f'path = "{spec.path}"',
        ]
        lines += [
            f"prompt_suffix = {json.dumps(spec.prompt_suffix)}",
            f'metric = "{spec.metric}"',
            f"limit = {limit}",
        ]
    path = tmp_path / "suite.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_blimp_and_easy_benchmarks_are_above_chance(smollm, tmp_path: Path) -> None:
    data, model = smollm
    suite = _suite_of(["blimp", "piqa", "arc_easy"], tmp_path, limit=335)
    result = evaluate(model, suite, data_root=data, show_progress=False)
    chance = {"blimp": 0.5, "piqa": 0.5, "arc_easy": 0.25}
    for name, level in chance.items():
        assert result.tasks[name].acc.low > level, (name, result.tasks[name].acc)
    assert len(result.tasks["blimp"].groups) == 67  # every paradigm is represented


@pytest.mark.parametrize(("name", "limit"), [("arc_easy", 150), ("piqa", 150)])
def test_scorer_agrees_with_lm_eval(smollm, tmp_path: Path, name: str, limit: int) -> None:
    adapter = pytest.importorskip("archaudit.evals.lmeval_adapter")
    data, model = smollm
    spec = _task(name)
    adapter.write_task_yaml(tmp_path, f"{name}_local", data / spec.path, spec.prompt_suffix)
    ours = evaluate(model, _suite_of([name], tmp_path, limit), data_root=data, show_progress=False)
    ours_task = ours.tasks[name]
    hf_args = f"pretrained={(data / GGUF).parent},gguf_file={Path(GGUF).name},dtype=float32"
    runs = {
        "lm-eval hf": adapter.run_local_task(
            "hf",
            f"{name}_local",
            tmp_path,
            limit=limit,
            model_args=hf_args,
            device="cpu",
            batch_size=32,
        ),
        "lm-eval archaudit adapter": adapter.run_local_task(
            adapter.ArchauditHarnessLM(model=model), f"{name}_local", tmp_path, limit=limit
        ),
    }
    for label, run in runs.items():
        metrics = run["results"][f"{name}_local"]
        assert abs(metrics["acc,none"] - ours_task.acc.value) <= 0.005, (
            label,
            metrics,
            ours_task.acc,
        )
        assert abs(metrics["acc_norm,none"] - ours_task.acc_norm.value) <= 0.005, (
            label,
            metrics,
            ours_task.acc_norm,
        )
