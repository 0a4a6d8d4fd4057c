"""What `status` costs on a large audit: scanning N run directories, and what an index saves.

Builds an audit directory of N runs (default 10,000, the plan's MAX_RUNS) by copying one
planned run.json into every run folder, with DONE in a share of them, then times
(warm page cache, the least CPU time of `--repeat` tries):

- scan: `run_status` of every run directory (what `status` and the exports read);
- export: the scan plus writing results.csv and items.csv;
- sqlite: writing every status into an SQLite file (what index.sqlite cost on top);
- query: reading every run's row back from that file (the most an index could save).

    .venv/bin/python benchmarks/store_scan.py [--runs 10000] [--done 0.5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.setup.spec import load_audit

AUDIT = """
name = "scan"
arms = []
[seeds]
noise_floor = 2
[eval]
suite = ""
[recipe]
steps = 10
batch_tokens = 512
[scales.xs]
d_model = 32
n_layers = 1
n_heads = 2
context_length = 32
"""


def build(root: Path, runs: int, done: float) -> Path:
    """An audit of `runs` baseline-like runs (100 arms × runs/100 seeds), `done` of them DONE."""
    (root / "scan.toml").write_text(AUDIT)
    plan = make_plan(load_audit(root / "scan.toml", runs_dir=root / "runs"))
    spec = plan.runs[0]
    for i in range(runs):
        arm, seed = f"arm{i % 100:02d}", i // 100
        run = dataclasses.replace(spec, arm=arm, seed=seed, path=f"{arm}/xs/seed-{seed}")
        run_dir = plan.audit_dir / run.path
        run_dir.mkdir(parents=True)
        (run_dir / store.RUN_FILE).write_text(json.dumps(run.to_json()))
        if i < done * runs:
            metrics = {"val_loss": 3.0 + i * 1e-4, "train_loss": 3.1}
            store.write_done(run_dir, RunRecord.of_run(run, status="ok", metrics=metrics))
    return plan.audit_dir


def best(repeat: int, work: Callable[[], object]) -> float:
    """The least CPU time of `repeat` calls: on a shared machine, wall time measures the
    neighbours as much as the code."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def write_sqlite(path: Path, statuses: list[store.RunStatus]) -> None:
    path.unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE runs (path TEXT PRIMARY KEY, state TEXT, step INT, val REAL)")
        db.executemany(
            "INSERT INTO runs VALUES (?,?,?,?)",
            [(str(s.path), s.state, s.step, s.result and s.result.metric("val_loss"))
             for s in statuses],
        )  # fmt: skip


def query_sqlite(path: Path) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT * FROM runs").fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--done", type=float, default=0.5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        audit_dir = build(Path(tmp), args.runs, args.done)
        dirs = store.audit_run_dirs(audit_dir)
        statuses = [store.run_status(d) for d in dirs]
        index = audit_dir / "index.sqlite"
        figures = {
            "list": best(args.repeat, lambda: store.audit_run_dirs(audit_dir)),
            "scan": best(args.repeat, lambda: [store.run_status(d) for d in dirs]),
            "export": best(args.repeat, lambda: store.refresh_export(audit_dir)),
            "sqlite": best(args.repeat, lambda: write_sqlite(index, statuses)),
            "query": best(args.repeat, lambda: query_sqlite(index)),
        }
    print(f"{args.runs} runs, {args.done:.0%} finished (best of {args.repeat}, CPU seconds):")
    for name, seconds in figures.items():
        print(f"  {name:<7} {seconds:8.3f}   {1e6 * seconds / args.runs:8.1f} µs/run")


if __name__ == "__main__":
    main()
