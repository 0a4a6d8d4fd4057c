"""`rerun`: retrain a finished run and compare curves and final metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from archaudit.audit.execute.rerun import RerunReport, rerun
from archaudit.audit.execute.runner import run_one
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.store import materialize
from archaudit.audit.launcher.launch import RunOptions
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import app
from archaudit.errors import DataError


@pytest.fixture
def finished_run(write_audit, probe_suite: Path) -> Path:
    plan = make_plan(load_audit(write_audit(arms=[], eval={"suite": str(probe_suite)})))
    run_dir = materialize(plan)[0]
    assert run_one(run_dir, RunOptions(threads=1)) == "done"
    return run_dir


def test_rerun_on_the_same_cpu_is_bit_identical(finished_run: Path):
    result = CliRunner().invoke(app, ["rerun", str(finished_run), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["bit_identical"] and report["max_abs_diff"] == 0.0
    assert report["steps_compared"] == 12
    assert {"val_loss", "downstream_avg"} <= set(report["metric_abs_diff"])
    assert Path(report["rerun_dir"]).parent == finished_run / "reruns"


def test_a_difference_is_reported_not_hidden():
    report = RerunReport("a", "b", "cpu", 3, {"loss": 0.0, "val_loss": 2e-7}, {"val_loss": 0.0})
    assert not report.bit_identical and report.max_abs_diff == 2e-7
    missing = RerunReport("a", "b", "cpu", 3, {"loss": 0.0}, {"downstream_avg": float("nan")})
    assert not missing.bit_identical


def test_rerun_needs_a_finished_run(write_audit):
    run_dir = materialize(make_plan(load_audit(write_audit())))[0]
    with pytest.raises(DataError, match="has not finished"):
        rerun(run_dir)
