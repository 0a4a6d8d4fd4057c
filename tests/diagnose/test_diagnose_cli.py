"""`archaudit diagnose ...`: JSON on stdout, files in the run's diagnostics/ folder, one-line
errors for a missing or unreadable model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import archaudit.cli.diagnose_cmd  # noqa: F401  (registers `archaudit diagnose`)
from archaudit.cli import app
from archaudit.config import ModelConfig, Recipe
from archaudit.diagnose import view_of
from archaudit.diagnose.reasoning import reasoning_corpus
from archaudit.errors import DataError

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run_and_text(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from archaudit.train import train

    root = tmp_path_factory.mktemp("diagnose-cli")
    text = root / "reasoning.txt"
    text.write_text(reasoning_corpus(20_000, seed=0, terms=3))
    cfg = ModelConfig(d_model=32, n_layers=3, n_heads=2, context_length=32)
    recipe = Recipe(
        steps=4, batch_tokens=512, corpus=str(text), device="cpu", eval_every=4, checkpoint_every=4
    )
    assert train(cfg, recipe, root / "run", seed=0).status == "ok"
    return root / "run", text


@pytest.mark.parametrize(
    ("command", "field"),
    [
        (["bottleneck"], "suppressed_fraction"),
        (["attention", "--sink-tokens", "2"], "sink_mass"),
        (["heads"], "loss_increase"),
        (["prune", "--method", "tail"], "states"),
        pytest.param(
            [
                "prune",
                "--method",
                "laco",
                "--tts",
                "--tts-items",
                "3",
                "--samples",
                "2",
                "--terms",
                "3",
                "--recover-steps",
                "2",
            ],
            "states",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_json_and_files(run_and_text: tuple[Path, Path], command: list[str], field: str) -> None:
    run, text = run_and_text
    args = [
        "diagnose",
        command[0],
        str(run),
        "--data",
        str(text),
        "--tokens",
        "62",
        "--window",
        "31",
        *command[1:],
        "--json",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(result.output)
    assert field in data
    name = command[0]
    assert json.loads((run / "diagnostics" / f"{name}.json").read_text()) == data
    assert (run / "diagnostics" / f"{name}.png").stat().st_size > 1000
    if name == "prune":
        assert data["states"][1]["layers"] == 2
    if "--tts" in command:
        assert [s["name"] for s in data["states"]] == ["full", "pruned", "recovered"]
        assert data["plan"]["merged_into"] is not None
        assert data["states"][2]["tts"]["ns"] == [1, 2]


def test_task_writes_the_training_corpus(tmp_path: Path) -> None:
    out = tmp_path / "task.txt"
    result = runner.invoke(app, ["diagnose", "task", str(out), "--chars", "500", "--seed", "2"])
    assert result.exit_code == 0, result.output
    assert out.read_text() == reasoning_corpus(500, seed=2)


def test_missing_model_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    missing = tmp_path / "nope"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "archaudit.cli",
            "diagnose",
            "bottleneck",
            str(missing),
            "--data",
            str(tmp_path / "x.txt"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "does not exist" in proc.stderr and str(missing) in proc.stderr


def test_unreadable_model_and_data_are_data_errors(
    tmp_path: Path, run_and_text: tuple[Path, Path]
) -> None:
    pytest.importorskip("transformers")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file at all")
    with pytest.raises(DataError, match=r"cannot be read|cannot load it"):
        view_of(broken)
    run, _ = run_and_text
    result = runner.invoke(
        app, ["diagnose", "bottleneck", str(run), "--data", str(tmp_path / "absent.txt")]
    )
    assert isinstance(result.exception, DataError) and "not found" in str(result.exception)
    result = runner.invoke(
        app,
        ["diagnose", "prune", str(run), "--data", str(run / "spec.json"), "--method", "angualr"],
    )
    assert "did you mean 'angular'" in str(result.exception)
