"""Executors: the local pool's threads and GPU slots, torchrun for multi-process runs, and Ray
and Slurm (submitit's local executor) running a 4-run audit (slow set)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from archaudit.audit.execute.coordinator import run_audit
from archaudit.audit.execute.runner import run_one
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.store import ATTEMPTS, DONE, RESULTS_FILE, materialize
from archaudit.audit.launcher.executors import LocalExecutor, cpu_cores, make_executor
from archaudit.audit.launcher.launch import RunOptions
from archaudit.audit.setup.spec import ExecutorSpec, load_audit
from archaudit.errors import ConfigError

FOUR_RUNS = dict(arms=["qk_norm", "geglu"])  # baseline × 2 seeds + 2 arms


def test_local_threads_share_the_cores(tmp_path: Path):
    for workers in (1, 2, 64):
        pool = make_executor(ExecutorSpec(workers=workers), tmp_path)
        assert pool.workers == workers and pool.threads == max(1, cpu_cores() // workers)
    assert make_executor(ExecutorSpec(workers=2, threads=3), tmp_path).threads == 3


class _Exited:
    """A launch that has already exited with code 0."""

    pid = 0

    def poll(self) -> int:
        return 0

    def wait(self) -> int:
        return 0


def test_local_asks_its_order_each_time_a_worker_is_free(tmp_path: Path, monkeypatch):
    pool = LocalExecutor(ExecutorSpec(workers=1), tmp_path)
    asked, launched = [], []
    pool.order = lambda queue: asked.append(list(queue)) or sorted(queue, reverse=True)
    monkeypatch.setattr(pool, "_launch", lambda run_dir, *_: launched.append(run_dir) or _Exited())
    dirs = [tmp_path / name for name in ("a", "b", "c")]
    assert pool._execute(dirs, RunOptions(), None) == dict.fromkeys(dirs, 0)
    assert launched == dirs[::-1]
    assert [len(queue) for queue in asked] == [3, 2, 1]


def test_local_gpu_slots_split_the_visible_gpus(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3,4")
    pool = LocalExecutor(ExecutorSpec(gpus_per_run=2), tmp_path)
    assert pool.gpu_slots == ["0,1", "2,3"] and pool.workers == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with pytest.raises(ConfigError, match="gpus_per_run = 2 but 1 GPU"):
        LocalExecutor(ExecutorSpec(gpus_per_run=2), tmp_path)


@pytest.mark.parametrize("kind", ["ray", "slurm"])
def test_a_missing_extra_says_how_to_install_it(kind: str, write_audit):
    module = {"ray": "ray", "slurm": "submitit"}[kind]
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed")
    with pytest.raises(ConfigError, match=rf"archaudit\[{kind}\]"):
        run_audit(make_plan(load_audit(write_audit(**FOUR_RUNS))), executor=kind, live=False)


def assert_ran_once(audit_dir: Path, runs: int) -> None:
    dirs = sorted(p.parent for p in audit_dir.glob("*/*/*/run.json"))
    assert len(dirs) == runs
    for run_dir in dirs:
        assert (run_dir / DONE).is_file(), (run_dir / "run-one.log").read_text()
        assert len((run_dir / ATTEMPTS).read_text().splitlines()) == 1
    _, *rows = (audit_dir / RESULTS_FILE).read_text().splitlines()
    assert len({tuple(r.split(",")[:3]) for r in rows}) == runs


def test_a_run_with_two_ranks_trains_under_torchrun(write_audit):
    run_dir = materialize(make_plan(load_audit(write_audit(arms=[]))))[0]
    assert run_one(run_dir, RunOptions(ranks=2, threads=1)) == "done"
    assert json.loads((run_dir / ATTEMPTS).read_text())["ranks"] == 2
    assert json.loads((run_dir / DONE).read_text())["train"]["steps"] == 12


@pytest.mark.slow
def test_ray_runs_a_four_run_audit(write_audit):
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    try:
        plan = make_plan(load_audit(write_audit(**FOUR_RUNS)))
        outcome = run_audit(plan, executor="ray", live=False)
    finally:
        ray.shutdown()
    assert outcome.counts == {"done": 4}, outcome.failed
    assert_ran_once(plan.audit_dir, 4)


@pytest.mark.slow
def test_slurm_runs_a_four_run_audit_with_submitits_local_executor(write_audit):
    pytest.importorskip("submitit", reason="the slurm extra is not installed")
    plan = make_plan(load_audit(write_audit(**FOUR_RUNS, executor={"cluster": "local"})))
    outcome = run_audit(plan, executor="slurm", live=False)
    assert outcome.counts == {"done": 4}, outcome.failed
    assert_ran_once(plan.audit_dir, 4)
    assert any((plan.audit_dir / "_submitit").iterdir()), "submitit kept its job files"
