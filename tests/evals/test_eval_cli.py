"""`archaudit eval MODEL --suite NAME [--limit N] [--json]`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import archaudit.cli.eval_cmd  # noqa: F401  (registers `archaudit eval`)
from archaudit.cli import app

runner = CliRunner()


def test_eval_json_on_a_trained_run(trained_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "evals.json"
    result = runner.invoke(
        app,
        ["eval", str(trained_run), "--suite", "demo", "--limit", "6", "--json", "--out", str(out)],
    )
    assert result.exit_code == 0, (result.output, result.exception)
    summary = json.loads(result.output)
    assert summary["suite"] == "demo" and "items" not in summary["tasks"]["induction"]
    assert {"downstream_avg", "induction/acc", "induction/acc_low", "needle/acc_high"} <= set(
        summary["metrics"]
    )
    saved = json.loads(out.read_text())
    assert len(saved["tasks"]["induction"]["items"]) == 6
    assert saved["metrics"] == summary["metrics"]


def test_eval_table(trained_run: Path) -> None:
    result = runner.invoke(app, ["eval", str(trained_run), "--limit", "9", "--quiet", "--groups"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "associative_recall" in result.output and "downstream_avg" in result.output
    assert "needle/4x/depth=0.5:" in result.output  # long-context accuracy per length × depth


def _cli(*args: str) -> subprocess.CompletedProcess:
    # The real entry point, which maps user errors to one line and exit code 2.
    code = (
        "import sys, archaudit.cli.eval_cmd; from archaudit.cli import main; "
        "sys.argv[1:] = sys.argv[2:]; main()"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "x", *args], capture_output=True, text=True, timeout=120
    )


def test_user_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = _cli("eval", str(tmp_path / "nope"), "--suite", "demo")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    bad_suite = _cli("eval", str(tmp_path), "--suite", "dmeo")
    assert bad_suite.returncode == 2 and "did you mean 'demo'" in bad_suite.stderr


def test_an_unfinished_run_is_scored_with_a_warning(trained_run: Path, tmp_path, monkeypatch):
    """Issue 22: `eval` on a run interrupted at step 11 of 300 scored it without a word."""
    import shutil

    from archaudit.model import load

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    spec = json.loads((run / "spec.json").read_text())
    said: list[str] = []
    monkeypatch.setattr(load, "warn", said.append)
    load.load_model(run)
    assert said == []  # finished: nothing to say
    steps = spec["recipe"]["steps"]
    spec["recipe"]["steps"] = 300  # as if it had been interrupted at its last checkpoint
    (run / "spec.json").write_text(json.dumps(spec))
    load.load_model(run)
    assert len(said) == 1 and f"stopped at step {steps} of 300" in said[0]
