"""Must-show 1 and 2: `archaudit run` killed with SIGKILL mid-audit and rerun, and two `archaudit
run` processes on one audit. Every run ends with DONE once, nothing is trained twice, and the
results equal those of an uninterrupted audit, downstream numbers included, though the reference
ran in this process and the others in processes with other string-hash seeds (PYTHONHASHSEED)
and their own token cache, so that corpus and evaluation items are generated afresh."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from audit_helpers import TINY, archaudit, merged, to_toml
from typer.testing import CliRunner

from archaudit.audit.execute.runner import run_one
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.store import (
    ATTEMPTS,
    DONE,
    ITEMS_FILE,
    RESULTS_FILE,
    materialize,
    refresh_export,
)
from archaudit.audit.launcher.launch import RunOptions, cli_command
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import app
from archaudit.stats import compare_item_measure, load_items

AUDIT = merged(
    TINY,
    {
        "arms": ["qk_norm", "geglu"],
        "recipe": {"steps": 60, "checkpoint_every": 5, "eval_every": 20},
    },
)


@pytest.fixture(scope="module")
def audit_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("resume")
    # the recall probes draw distinct keys: the generators whose items once followed set order
    (folder / "probes.toml").write_text(
        'name = "probes"\n[defaults]\nlimit = 8\nformat = "probe"\n'
        + "".join(
            f'[[tasks]]\nname = "{name}"\nparams = {{ generator = "{name}", seed = 0 }}\n'
            for name in ("induction", "associative_recall", "noisy_recall")
        )
    )
    path = folder / "audit.toml"
    path.write_text(to_toml(merged(AUDIT, {"eval": {"suite": "probes.toml"}})))
    return path


@pytest.fixture(scope="module")
def reference(audit_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The uninterrupted audit, one run after the other in this process (same torch threads
    as the executor gives each run)."""
    plan = make_plan(load_audit(audit_file, runs_dir=tmp_path_factory.mktemp("reference")))
    threads = torch.get_num_threads()  # a module fixture outlives the per-test restore
    try:
        for run_dir in materialize(plan):
            assert run_one(run_dir, RunOptions(threads=TINY["executor"]["threads"])) == "done"
    finally:
        torch.set_num_threads(threads)
    refresh_export(plan.audit_dir)
    return plan.audit_dir


HALF = AUDIT["recipe"]["steps"] // 2


def fresh_process_env(tmp_path: Path, *hash_seeds: str) -> list[dict[str, str]]:
    """Environments for CLI processes: each its own hash seed (none this process's), one fresh
    token cache for all of them."""
    assert os.environ.get("PYTHONHASHSEED") not in hash_seeds
    cache = str(tmp_path / "cache")
    return [{**os.environ, "PYTHONHASHSEED": s, "ARCHAUDIT_CACHE": cache} for s in hash_seeds]


def newest_checkpoint(run_dir: Path) -> int:
    return max(
        (int(c.name.split("-")[1]) for c in (run_dir / "checkpoint").glob("step-*")), default=0
    )


def run_dirs(audit_dir: Path) -> list[Path]:
    return sorted(p.parent for p in audit_dir.glob("*/*/*/run.json"))


def attempts(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / ATTEMPTS).read_text().splitlines()]


def assert_same_results(audit_dir: Path, reference: Path) -> None:
    for name in (RESULTS_FILE, ITEMS_FILE):
        assert (audit_dir / name).read_text() == (reference / name).read_text(), name
    assert len((audit_dir / ITEMS_FILE).read_text().splitlines()) > 1, "items were exported"
    metrics = {row.split(",")[3] for row in (audit_dir / RESULTS_FILE).read_text().splitlines()}
    assert {"downstream_avg", "associative_recall/acc", "noisy_recall/acc"} <= metrics


def test_sigkill_mid_audit_then_rerun(audit_file: Path, reference: Path, tmp_path: Path):
    runs = tmp_path / "runs"
    audit_dir = runs / "tiny"
    argv = cli_command("run", str(audit_file), "--runs-dir", str(runs), "--quiet")
    first_env, rerun_env = fresh_process_env(tmp_path, "11", "12")
    proc = subprocess.Popen(argv, env=first_env)
    deadline = time.monotonic() + 300
    while True:
        assert proc.poll() is None, "the audit finished before it could be killed"
        assert time.monotonic() < deadline
        dirs = run_dirs(audit_dir) if audit_dir.is_dir() else []
        done = [d for d in dirs if (d / DONE).exists()]
        # cut off mid-training, with half the steps still to go: a wide margin before DONE
        partial = [d for d in dirs if not (d / DONE).exists() and 0 < newest_checkpoint(d) <= HALF]
        if done and partial:
            proc.send_signal(signal.SIGKILL)  # only `archaudit run`: its workers die with it
            killed_at = time.time()
            break
        time.sleep(0.01)
    proc.wait()
    time.sleep(0.5)
    finished = {d: ((d / DONE).read_bytes(), (d / DONE).stat().st_mtime_ns) for d in done}
    killed = [d for d in partial if not (d / DONE).exists()]
    late = {d.name: (d / DONE).stat().st_mtime - killed_at for d in partial if d not in killed}
    assert killed, f"a run was cut off mid-training (DONE seconds after the kill: {late})"

    rerun = archaudit("run", str(audit_file), "--runs-dir", str(runs), "--quiet", env=rerun_env)
    assert rerun.returncode == 0, rerun.stderr

    dirs = run_dirs(audit_dir)
    assert len(dirs) == 4 and all((d / DONE).is_file() for d in dirs)
    for d, (content, mtime) in finished.items():
        assert ((d / DONE).read_bytes(), (d / DONE).stat().st_mtime_ns) == (content, mtime)
        assert len(attempts(d)) == 1, f"{d} was trained again"
    for d in killed:
        assert len(attempts(d)) == 2
        assert attempts(d)[1]["resume_step"] > 0, f"{d} did not resume from its checkpoint"
    assert not list(audit_dir.glob("*/*/*/claim.*")), "claims are released"
    assert_same_results(audit_dir, reference)


# 23 s: two real `run` processes; test_audit_claims covers the claim races unit by unit
@pytest.mark.slow
def test_two_run_processes_execute_each_run_once(audit_file: Path, reference: Path, tmp_path: Path):
    runs = tmp_path / "runs"
    argv = cli_command("run", str(audit_file), "--runs-dir", str(runs), "--quiet")
    procs = [
        subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
        for env in fresh_process_env(tmp_path, "21", "22")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    dirs = run_dirs(runs / "tiny")
    assert len(dirs) == 4
    for d in dirs:
        assert (d / DONE).is_file()
        assert len(attempts(d)) == 1, f"{d} ran {len(attempts(d))} times"
    pids = {attempts(d)[0]["pid"] for d in dirs}
    assert len(pids) == 4  # every run-one is its own process
    assert_same_results(runs / "tiny", reference)


def test_status_reads_the_directories(reference: Path):
    (reference / RESULTS_FILE).unlink()
    status = CliRunner().invoke(app, ["status", str(reference), "--json"])
    runs = json.loads(status.stdout)["runs"]
    assert [run["state"] for run in runs] == ["done"] * 4
    assert all(run["result"]["id"] == run["id"] for run in runs)
    assert (reference / RESULTS_FILE).is_file()


def test_items_csv_carries_each_items_bpb_and_margin(reference: Path):
    """Per-item bits per byte (and margin, empty for these cloze probes) reach items.csv, so the
    paired item tests run on them; the Parquet twin holds the same values."""
    rows = list(csv.DictReader((reference / ITEMS_FILE).open()))
    assert rows and {"bpb", "margin"} <= set(rows[0])
    assert all(float(row["bpb"]) > 0 for row in rows)
    assert all(row["margin"] == "" for row in rows)  # probes are cloze: no wrong choices
    items = load_items(reference)
    assert items.measures == ("bpb", "margin")
    paired = compare_item_measure(items, "qk_norm", "baseline", "xs", "bpb", n_boot=100)
    assert paired.n_items == len({(row["task"], row["item"]) for row in rows})
