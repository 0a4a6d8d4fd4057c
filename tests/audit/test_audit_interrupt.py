"""Ctrl-C and SIGTERM on a running `archaudit run` (issue 22, must-show 3).

A terminal's Ctrl-C sends SIGINT to its whole foreground process group. Workers used to share
the coordinator's group, so they got the terminal's SIGINT and then the coordinator's SIGTERM:
the second signal aborted their save, and the rerun resumed from an older checkpoint. Here a
real pseudo-terminal delivers the ^C; every worker must save the step it was at, the
coordinator must say so and print the resume command, and the rerun must resume exactly there.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest
from audit_helpers import TINY, merged, to_toml

from archaudit.audit.grid.store import ATTEMPTS, DONE, METRICS
from archaudit.audit.launcher.launch import cli_command
from archaudit.rundir import checkpoint_dirs, checkpoint_step

AUDIT = merged(
    TINY,
    {
        "arms": ["qk_norm"],
        # no periodic checkpoint before the end: what is saved is the step the signal met
        "recipe": {"steps": 300, "checkpoint_every": 1000, "eval_every": 1000},
    },
)
pytestmark = pytest.mark.slow  # two real audits and a rerun: 2.5–3 min on this machine
RUNS = ("baseline/xs/seed-0", "baseline/xs/seed-1", "qk_norm/xs/seed-0")
TIMEOUT_S = 120


def audit_file(tmp_path: Path) -> Path:
    path = tmp_path / "audit.toml"
    path.write_text(to_toml(merged(AUDIT, {"runs_dir": str(tmp_path / "runs")})))
    return path


def last_step(run_dir: Path) -> int:
    lines = (run_dir / METRICS).read_text().splitlines() if (run_dir / METRICS).exists() else []
    return json.loads(lines[-1])["step"] if lines else 0


def wait_for_training(audit_dir: Path, runs: int, steps: int = 3) -> list[Path]:
    """The run directories that have trained at least `steps` steps, once `runs` of them do."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        training = [audit_dir / r for r in RUNS if last_step(audit_dir / r) >= steps]
        if len(training) >= runs:
            return training
        time.sleep(0.05)
    raise AssertionError("the workers never started training")


def saved_step(run_dir: Path) -> int | None:
    checkpoints = checkpoint_dirs(run_dir)
    return checkpoint_step(checkpoints[-1]) if checkpoints else None


def resumed_from(run_dir: Path) -> int:
    attempts = (run_dir / ATTEMPTS).read_text().splitlines()
    return json.loads(attempts[-1])["resume_step"]


def in_a_terminal(argv: list[str]) -> tuple[subprocess.Popen, int, list[bytes]]:
    """Start `argv` as a terminal would: a new session whose controlling terminal is a pty,
    in the terminal's foreground process group. Returns the process, the pty's master side
    and the output read from it so far (a thread keeps reading, so the child never blocks)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        argv,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(slave)
    output: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the last process holding the terminal has exited
                return
            if not chunk:
                return
            output.append(chunk)

    threading.Thread(target=read, daemon=True).start()
    return proc, master, output


def test_one_ctrl_c_saves_every_workers_step_and_the_rerun_resumes_there(tmp_path: Path):
    path = audit_file(tmp_path)
    audit_dir = tmp_path / "runs" / "tiny"
    proc, master, output = in_a_terminal(cli_command("run", str(path), "--workers", "2"))
    try:
        training = wait_for_training(audit_dir, runs=2)
        assert os.tcgetpgrp(master) == os.getpgid(proc.pid)  # the coordinator is in front
        os.write(master, b"\x03")  # ^C: the terminal sends SIGINT to the foreground group
        assert proc.wait(timeout=TIMEOUT_S) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        time.sleep(0.2)  # the reader drains the pty
        os.close(master)
    text = " ".join(b"".join(output).decode(errors="replace").split())  # unwrap rich's lines
    assert "Ctrl-C: every running worker saved its current step" in text, text[-2000:]
    # rich may break a long tmp path (xdist's workers add a folder) inside the word: no spaces
    assert f"resumewith:archauditrun{path}" in "".join(text.split())
    stopped = [audit_dir / r for r in RUNS if not (audit_dir / r / DONE).exists()]
    assert set(training) <= set(stopped)
    for run_dir in training:
        step = saved_step(run_dir)
        # the step the worker was at when ^C came, saved (not an older one, not none)
        assert step is not None and step == last_step(run_dir) >= 3, run_dir
        assert f"{run_dir.relative_to(audit_dir)}: saved at step {step}" in text
    saved = {run_dir: saved_step(run_dir) for run_dir in training}
    rerun = subprocess.run(cli_command("run", str(path), "-q"), timeout=TIMEOUT_S, check=False)
    assert rerun.returncode == 0
    for run_dir, step in saved.items():
        assert resumed_from(run_dir) == step  # exactly where it stopped
        assert (run_dir / DONE).exists()


def test_a_background_coordinator_stops_cleanly_on_sigterm_and_says_so(tmp_path: Path):
    """Started with `&` from a shell without job control, SIGINT is ignored: SIGTERM is how it
    is stopped, and it must stop its workers the same way (each saves its step) and log it."""
    path = audit_file(tmp_path)
    audit_dir = tmp_path / "runs" / "tiny"
    log = tmp_path / "coordinator.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            cli_command("run", str(path), "--workers", "2"),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        try:
            training = wait_for_training(audit_dir, runs=2)
            proc.send_signal(signal.SIGINT)  # ignored, as in the background
            time.sleep(0.5)
            assert proc.poll() is None
            proc.terminate()
            assert proc.wait(timeout=TIMEOUT_S) == 130
        finally:
            if proc.poll() is None:
                proc.kill()
    text = log.read_text()
    assert "SIGTERM: every running worker saved its current step" in text, text[-2000:]
    for run_dir in training:
        step = saved_step(run_dir)
        assert step is not None and step == last_step(run_dir), run_dir
