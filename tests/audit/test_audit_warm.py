"""Runs that start warm (archaudit.audit.launcher.warm): forked from a server that has imported
torch and archaudit, each run still behaves as the fresh interpreter it replaces: its exit code, its
log, its torch threads and environment, and it dies with the server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.store import ATTEMPTS, DONE, materialize
from archaudit.audit.launcher.executors import LOG_FILE, LocalExecutor, run_one_argv
from archaudit.audit.launcher.launch import RunOptions, cli_command
from archaudit.audit.launcher.warm import Launch, WarmServer, kept_server, warm_server, warm_starts
from archaudit.audit.setup.spec import ExecutorSpec, load_audit
from archaudit.rundir import ENV

pytestmark = pytest.mark.skipif(not warm_starts(), reason="warm starts need Linux")
WAIT_S = 120.0


def test_a_warm_run_exits_and_logs_as_a_fresh_interpreter_does(tmp_path: Path):
    argv = cli_command("run-one", str(tmp_path / "missing"), "--quiet")
    cold = subprocess.run(argv, capture_output=True, text=True, check=False)
    server = WarmServer()
    try:
        log = tmp_path / LOG_FILE
        code = server.start(Launch(tuple(argv), str(log), dict(os.environ), 0)).wait()
    finally:
        server.close()
    assert cold.returncode != 0 and code == cold.returncode
    assert cold.stderr.strip() and cold.stderr.strip() in log.read_text()


def test_warm_runs_train_with_the_executors_threads(write_audit):
    threads = 1 if torch.get_num_threads() > 1 else 2  # not what the server's torch has
    plan = make_plan(load_audit(write_audit(arms=[])))
    run_dirs = materialize(plan)
    pool = LocalExecutor(ExecutorSpec(workers=2, threads=threads), plan.audit_dir)
    codes = pool.execute(run_dirs, RunOptions())
    assert set(codes.values()) == {0}
    for run_dir in run_dirs:
        assert (run_dir / DONE).is_file(), (run_dir / LOG_FILE).read_text()
        assert json.loads((run_dir / ENV).read_text())["torch_threads"] == threads


def test_a_run_has_its_launchs_environment_and_dies_with_its_server(write_audit, monkeypatch):
    plan = make_plan(load_audit(write_audit(arms=[])))
    run_dir = materialize(plan)[0]
    server = WarmServer()
    cache = plan.audit_dir / "cache"
    monkeypatch.setenv("ARCHAUDIT_CACHE", str(cache))  # after the server started
    argv = tuple(run_one_argv(run_dir, RunOptions(threads=1)))
    run = server.start(Launch(argv, str(run_dir / LOG_FILE), dict(os.environ), 1))
    deadline = time.monotonic() + WAIT_S
    while not cache.is_dir() and time.monotonic() < deadline:
        time.sleep(0.05)  # the run prepares its corpus in the cache its launch named
    assert (run_dir / ATTEMPTS).is_file() and cache.is_dir()
    server.proc.kill()
    assert run.wait() == -signal.SIGKILL
    while _alive(run.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(run.pid), "the run outlived its server"
    server.close()


def test_an_execute_whose_server_was_killed_runs_its_runs_on_a_new_one(tmp_path: Path, capsys):
    """Issue 57: `kill -9` of the warm server made the coordinator exit 1 with a traceback
    (the next start found the server gone). Its runs die with it (the test above) and are
    taken over as any dead worker's; the next start gets a new server, with one line."""
    run_dirs = [tmp_path / name for name in ("a", "b")]
    for run_dir in run_dirs:
        run_dir.mkdir()  # not run directories: each run-one exits 2 at once
    pool = LocalExecutor(ExecutorSpec(workers=1, threads=1), tmp_path)
    with warm_server() as server:
        server.proc.kill()
        server.proc.wait()
        codes = pool._execute(run_dirs, RunOptions(), server)
    assert codes == dict.fromkeys(run_dirs, 2)
    assert "not an audit run directory" in (run_dirs[0] / LOG_FILE).read_text()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("warning: the warm start server exited (code -9)"), line


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_kept_server_serves_every_execute_in_its_block_and_closes_at_its_end():
    with warm_server() as alone:
        pass
    assert alone.proc.poll() is not None  # a server of its own closes with its execute
    with kept_server():
        with warm_server() as first:
            pass
        with warm_server() as second:
            assert second is first and first.proc.poll() is None  # the next round's, running
        first.proc.kill()
        first.proc.wait()
        with warm_server() as third:
            assert third is not first and third.proc.poll() is None  # a dead one is replaced
    assert third.proc.poll() is not None


def test_a_started_kept_server_is_shared_by_inner_blocks_and_killed_without_runs():
    with kept_server(start=True):
        with warm_server() as first:
            pass
        with kept_server(), warm_server() as inner:  # the loop's block inside the demo's
            assert inner is first
        assert first.proc.poll() is None  # the inner block's end did not close it
    assert first.proc.poll() is not None
    assert first.proc.returncode == -signal.SIGKILL  # it started no run: not waited for


def test_a_server_that_started_runs_is_waited_for_not_killed(tmp_path):
    with warm_server() as server:
        argv = tuple(cli_command("run-one", "--help"))
        server.start(Launch(argv, str(tmp_path / LOG_FILE), dict(os.environ), 1)).wait()
    assert server.proc.returncode == 0
