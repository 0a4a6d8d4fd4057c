"""One run end to end: divergence is a result, a failure is recorded and retried, SIGTERM
finishes the step, checkpoints it and lets go, an edited run gets a fresh directory, a result
of another run is refused."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from audit_helpers import archaudit

from archaudit.audit.execute.coordinator import run_audit
from archaudit.audit.execute.runner import run_one
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.grid.store import (
    ATTEMPTS,
    DONE,
    FAILED,
    SUPERSEDED_DIR,
    audit_run_dirs,
    materialize,
    refresh_export,
    run_status,
    write_done,
)
from archaudit.audit.launcher.launch import RunOptions, cli_command
from archaudit.audit.setup.spec import load_audit
from archaudit.errors import ConfigError
from archaudit.rundir import METRICS, WEIGHTS, checkpoint_dirs, checkpoint_step
from archaudit.stats import load_table


def test_a_diverged_run_is_a_result_with_its_step(write_audit):
    plan = make_plan(load_audit(write_audit(arms=[]), ["recipe.lr=1e4", "recipe.grad_clip=1e9"]))
    outcome = run_audit(plan, live=False)
    assert outcome.counts == {"diverged": 2} and not outcome.failed
    done = json.loads((plan.run_dir(plan.runs[0]) / DONE).read_text())
    assert done["status"] == "diverged" and done["diverged_step"] >= 1
    rows = [r for r in load_table(plan.audit_dir).rows if r.seed == 0]
    assert {(r.metric, r.status, r.step) for r in rows} == {
        ("val_loss", "diverged", done["diverged_step"])
    }


def test_a_failed_run_is_recorded_and_retried(write_audit, probe_suite: Path):
    path = write_audit(arms=[], eval={"suite": str(probe_suite)})
    plan = make_plan(load_audit(path))
    text = probe_suite.read_text()
    probe_suite.write_text(text.replace('format = "probe"', 'format = "probes"'))  # after planning
    outcome = run_audit(plan, live=False)
    error = outcome.failed["baseline/xs/seed-0"]
    assert error.startswith("ConfigError: ") and "probes.toml" in error  # names the suite file
    assert "unknown task format" in error
    run_dir = plan.run_dir(plan.runs[0])
    assert run_status(run_dir).state == "failed" and (run_dir / FAILED).is_file()

    probe_suite.write_text(text)
    assert archaudit("run", str(path), "--quiet").returncode == 0
    assert run_status(run_dir).state == "done" and not (run_dir / FAILED).exists()
    attempts = [json.loads(line) for line in (run_dir / ATTEMPTS).read_text().splitlines()]
    assert len(attempts) == 2 and attempts[1]["resume_step"] == 12, "training was not redone"


def test_sigterm_checkpoints_and_releases_the_claim(write_audit):
    plan = make_plan(load_audit(write_audit(arms=[]), ["recipe.steps=3000"]))
    run_dir = materialize(plan)[0]
    proc = subprocess.Popen(cli_command("run-one", str(run_dir), "--threads=1", "--quiet"))
    while not list((run_dir / "checkpoint").glob("step-*")):
        assert proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) != 0
    assert not list(run_dir.glob("claim.*")) and not (run_dir / FAILED).exists()
    assert run_status(run_dir).state == "planned", "free for the next worker at once"
    assert len((run_dir / ATTEMPTS).read_text().splitlines()) == 1


def test_an_edited_arm_moves_the_old_directory_aside(write_audit):
    first = make_plan(load_audit(write_audit()))
    materialize(first)
    old_id = {r.path: r.run_id for r in first.runs}["qk_norm/xs/seed-0"]
    edited = make_plan(load_audit(write_audit(), ["scales.xs.d_model=48"]))
    materialize(edited)
    moved = first.audit_dir / SUPERSEDED_DIR / f"qk_norm/xs/seed-0-{old_id}"
    assert json.loads((moved / "run.json").read_text())["id"] == old_id
    now = json.loads((edited.audit_dir / "qk_norm/xs/seed-0/run.json").read_text())
    assert now["id"] != old_id
    assert all(SUPERSEDED_DIR not in d.parts for d in audit_run_dirs(edited.audit_dir))


def test_the_tuned_flag_follows_the_arm_into_every_result(write_audit):
    arms = [{"arm": "qk_norm", "recipe": {"lr": 0.01}, "tuned": True}]
    plan = make_plan(load_audit(write_audit(arms=arms)))
    run_dir = next(d for d in materialize(plan) if "qk_norm" in d.parts)
    assert run_one(run_dir) == "done"
    assert json.loads((run_dir / "run.json").read_text())["tuned"] is True
    assert json.loads((run_dir / DONE).read_text())["tuned"] is True
    refresh_export(plan.audit_dir)
    rows = load_table(plan.audit_dir).rows
    assert rows and all(r.tuned for r in rows) and {r.arm for r in rows} == {"qk_norm"}


def test_sigterm_after_the_update_resumes_the_uninterrupted_curve(write_audit, tmp_path):
    """SIGTERM during validation (the weights already hold the step's update) through
    run-one: the step finishes and is saved as itself; the rerun equals an uninterrupted run."""
    path = write_audit(arms=[])
    plan = make_plan(load_audit(path, ["recipe.eval_every=4"]))  # validation at 4, 8, 12
    twin = make_plan(load_audit(path, ["recipe.eval_every=4"], runs_dir=tmp_path / "twin"))
    run_dir, twin_dir = materialize(plan)[0], materialize(twin)[0]
    sigterm_in_validation = textwrap.dedent("""
        import os, signal, sys
        from archaudit.audit.execute.runner import RunOptions, run_one
        from archaudit.train.callbacks import validation as val
        real = val.validation_loss
        def validation(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)
            return real(*args, **kwargs)
        val.validation_loss = validation
        run_one(sys.argv[1], RunOptions(threads=1))
    """)
    proc = subprocess.run([sys.executable, "-c", sigterm_in_validation, str(run_dir)])
    assert proc.returncode != 0
    assert [checkpoint_step(c) for c in checkpoint_dirs(run_dir)][-1] == 4
    assert not list(run_dir.glob("claim.*")) and run_status(run_dir).state == "planned"

    assert run_one(run_dir, RunOptions(threads=1)) == "done"
    assert run_one(twin_dir, RunOptions(threads=1)) == "done"

    def curve(d: Path) -> list[dict]:
        rows = [json.loads(line) for line in (d / METRICS).read_text().splitlines()]
        return [{k: v for k, v in r.items() if k != "tokens_per_s"} for r in rows]

    assert curve(run_dir) == curve(twin_dir)
    done = [json.loads((d / DONE).read_text())["metrics"] for d in (run_dir, twin_dir)]
    assert done[0] == done[1]


def test_a_result_of_another_run_is_refused_not_reported(write_audit):
    plan = make_plan(load_audit(write_audit(arms=[])))
    second = materialize(plan)[1]
    done = RunRecord.of_run(plan.runs[0], status="ok", metrics={"val_loss": 1.0})
    write_done(second, done)  # first's result in second's directory, e.g. copied by hand
    with pytest.raises(ConfigError, match="holds the result of run"):
        run_one(second)
    status = run_status(second)
    assert status.state == "failed" and status.result is None
    assert "holds the result of run" in status.error


def test_a_run_json_edited_in_place_is_refused_not_trained_over(write_audit):
    path = write_audit(arms=[], recipe={"steps": 3})
    run_dir = materialize(make_plan(load_audit(path)))[0]
    assert run_one(run_dir) == "done"
    (run_dir / DONE).unlink()  # as if it had died before publishing its result
    checkpoints = sorted((c.name, (c / WEIGHTS).read_bytes()) for c in checkpoint_dirs(run_dir))
    edited = make_plan(load_audit(path, ["scales.xs.d_model=48"]))
    (run_dir / "run.json").write_text(json.dumps(edited.runs[0].to_json()))  # not via materialize
    with pytest.raises(ConfigError, match=r"holds a different run \(model.d_model: 32 → 48"):
        run_one(run_dir)
    assert (run_dir / FAILED).is_file()
    assert (
        sorted((c.name, (c / WEIGHTS).read_bytes()) for c in checkpoint_dirs(run_dir))
        == checkpoints
    )
