"""Issue 44, item 4: a FIFO where a file belongs is never waited on, at every door.

The audit file, a train config, a results CSV (given, or found in a folder), a suite file and
its items, a corpus, lm-eval results (alone, or beside a real run) and the files of a finished
run directory are each replaced by a FIFO with no writer. Reading one would block forever (a
FIFO named results_*.json hung `import lm-eval`, one named results.csv hung `stats`). The
harness is test_audit_fuzz's: exit 0 or 2, no traceback, a refusal's first line names the
file, nothing outside the output folder changes; an alarm fails a case that blocks instead of
hanging the suite."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from audit_helpers import alarm_after, to_toml
from test_audit_fuzz import (
    AUDIT,
    CONFIG,
    PLAN,
    RUN,
    RUNS,
    SEED,
    SUITE,
    TRAIN,
    Case,
    assert_clean_exit,
    finished,
    lay_out,
    results_csv,
    snapshot,
)

__all__ = ["finished"]  # the finished-run fixture, shared with test_audit_fuzz

LMEVAL_RESULTS = Path(__file__).resolve().parents[1] / "data" / "lmeval" / "smollm2"
STATS = ("stats", "{d}/results.csv", "--metric", "val_loss", "--json")
SUITE_AUDIT = to_toml(AUDIT | {"eval": {"suite": "suite.toml"}}).encode()
LMEVAL = ("import", "lm-eval", "{d}/lm", "--out", "{d}/out")
ALARM_S = 120
"""Far past any case's time: only a blocked read reaches it."""


def fifo_at(target: str) -> Callable[[Path, random.Random], None]:
    def mutate(d: Path, rng: random.Random) -> None:
        path = d / target
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        path.unlink(missing_ok=True)
        os.mkfifo(path)

    return mutate


def _lmeval_beside(d: Path, rng: random.Random) -> None:
    """A real lm-eval run, and a FIFO named like its results in a second folder."""
    (run,) = (LMEVAL_RESULTS / "baseline" / "seed-0").iterdir()
    shutil.copytree(run, d / "lm" / "a")
    fifo_at("lm/b/results_2026-12-01T00-00-00.json")(d, rng)


def fifo_cases() -> Iterator[Case]:
    csv_text = "".join(",".join(row) + "\n" for row in results_csv(random.Random(SEED)))
    corpus_cfg = to_toml(CONFIG | {"recipe": CONFIG["recipe"] | {"corpus": "c.txt"}}).encode()
    doors = [
        ("audit", {}, "audit.toml", PLAN, RUNS),
        ("config", {}, "cfg.toml", TRAIN, "run"),
        ("results-csv", {}, "results.csv", STATS, "(none)"),
        ("results-parquet", {}, "results.parquet",
         ("stats", "{d}/results.parquet", "--metric", "val_loss"), "(none)"),
        ("suite", {"audit.toml": SUITE_AUDIT}, "suite.toml", PLAN, RUNS),
        ("items", {"audit.toml": SUITE_AUDIT, "suite.toml": to_toml(SUITE).encode()},
         "mc.jsonl", PLAN, RUNS),
        ("corpus", {"cfg.toml": corpus_cfg}, "c.txt", TRAIN, "run"),
        ("lmeval", {}, "lm/results_2026-12-01T00-00-00.json", LMEVAL, "out"),
        ("stats-on-a-folder", {"res/x.txt": csv_text.encode()}, "res/results.csv",
         ("stats", "{d}/res", "--metric", "val_loss"), "(none)"),
    ]  # fmt: skip
    for name, files, target, argv, out in doors:
        yield Case(f"fifo-{name}", files, argv, (Path(target).name,), out, mutate=fifo_at(target))
    yield Case("fifo-lmeval-beside", {}, LMEVAL, ("results_",), "out", mutate=_lmeval_beside)
    for target in (f"{RUN}/run.json", f"{RUN}/spec.json", "audit/runs/fuzz/audit.json"):
        names = (Path(target).name, "seed-0")
        argv = ("status", "{d}/audit/runs/fuzz", "--json")
        yield Case(f"fifo-rundir-{Path(target).name}", {}, argv, names, "audit/runs/fuzz",
                   "audit", fifo_at(target))  # fmt: skip


FIFO_CASES = list(fifo_cases())


@pytest.fixture
def alarm() -> Iterator[None]:
    with alarm_after(ALARM_S):
        yield


@pytest.mark.parametrize("case", FIFO_CASES, ids=[c.id for c in FIFO_CASES])
def test_a_fifo_is_never_waited_on(case: Case, finished, tmp_path, monkeypatch, capsys, alarm):
    d = tmp_path / "case"
    if case.start_from:
        shutil.copytree(finished[case.start_from], d, symlinks=True)
    d.mkdir(exist_ok=True)
    for name in case.files:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
    lay_out(case, d, SEED, monkeypatch)
    out = d / case.out
    before = snapshot(tmp_path, out)
    assert_clean_exit([a.replace("{d}", str(d)) for a in case.argv], case.names, capsys)
    assert snapshot(tmp_path, out) == before, "something outside the output folder changed"
