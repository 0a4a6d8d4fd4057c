"""The store: run directories are the truth; the CSV and Parquet exports are views of them.

    runs/<audit>/audit.json                   the plan: spec, runs, protocol notes
    runs/<audit>/<arm>/<scale>/seed-<k>/      one run directory (its files: archaudit.rundir)
        run.json          the RunSpec (id = content hash)    written when the audit starts
        DONE              the result record, written last by an atomic link: exists once
        FAILED            the error of the last failed attempt (a new claim retries)
    runs/<audit>/results.csv    arm,scale,seed,metric,value,family,status,step,tuned,duties
    runs/<audit>/items.csv      arm,scale,seed,task,item,correct  (for paired tests)
    runs/<audit>/results.parquet, items.parquet   the same tables (with pandas + pyarrow)

The tool reads an audit's results from the DONE records (`read_results`); results.csv is their
export for users, written from that same table.

Top-level folders starting with "_" (`_tune`, `_superseded`) are not part of the audit.
Every `status` and `stats AUDIT_DIR` rescans the run directories. That costs about 0.35 ms of
CPU a run (run.json and DONE parsed, each distinct model and recipe built once), so 10,000 runs
take some 3.5 s of CPU (benchmarks/store_scan.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archaudit.audit.grid.claims import ClaimInfo, current_claim
from archaudit.audit.grid.plan import Plan, RunSpec
from archaudit.audit.grid.record import RunRecord
from archaudit.errors import ConfigError, DataError
from archaudit.files import atomic_write_text, open_regular, refuse_link
from archaudit.files import read_json_object as read_json
from archaudit.names import ITEMS_FILE, RESULTS_FILE, ResultStatus
from archaudit.progress import warn
from archaudit.rundir import ATTEMPTS as ATTEMPTS  # re-exported for the store's readers
from archaudit.rundir import AUDIT_FILE, DONE, EVALS, FAILED, METRICS, RUN_FILE, check_audit_target
from archaudit.stats.inference.items import ITEM_COLUMNS as ITEM_KEYS
from archaudit.stats.inference.items import ITEM_MEASURES, load_items
from archaudit.stats.records.csvio import csv_text
from archaudit.stats.records.errors import EmptyTableError
from archaudit.stats.records.frames import parquet_twin
from archaudit.stats.records.table import Row, Table, check_duties

SEQUENTIAL_DIR, SEQUENTIAL_SUMMARY = "sequential", "summary.json"
"""A sequential audit's round records and the last finished loop's summary (rule, verdicts)."""
TUNE_DIR, SUPERSEDED_DIR = "_tune", "_superseded"
ITEM_COLUMNS = (*ITEM_KEYS, *ITEM_MEASURES)
STATES = ("planned", "running", "stale", "failed", "done", "diverged")


# ---------------------------------------------------------------------------------------------
# writing


def write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def write_done(run_dir: Path, record: RunRecord) -> None:
    """Publish the run's result. `os.link` refuses an existing target, so DONE is written
    exactly once even if two processes got this far (which the claim prevents)."""
    tmp = run_dir / f".{DONE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record.to_json(), indent=1, sort_keys=True) + "\n")
    try:
        os.link(tmp, run_dir / DONE)
    except FileExistsError:
        raise DataError(f"{run_dir} already has a DONE file: another worker finished it") from None
    finally:
        tmp.unlink(missing_ok=True)


def materialize(plan: Plan) -> list[Path]:
    """Create the audit's directories: audit.json, and run.json for every run. A directory that
    holds a different run (its arm, recipe or scale was edited) moves to `_superseded/`."""
    audit_dir = plan.audit_dir
    check_audit_target(audit_dir)
    audit_dir.mkdir(parents=True, exist_ok=True)
    write_json(
        audit_dir / AUDIT_FILE,
        {
            "name": plan.spec.name,
            "source": plan.spec.source,
            "runs": [run.path for run in plan.runs],
            "notes": [note.to_json() for note in plan.notes],
            "baselines": list(plan.spec.baselines),
            "suite": plan.spec.eval.suite,
            "primary": list(plan.spec.primary_metrics),
            "policy": plan.spec.seeds.policy,  # status: a sequential audit has later rounds
        },
    )
    dirs = []
    for run in plan.runs:
        run_dir = plan.run_dir(run)
        for part in reversed(run_dir.relative_to(audit_dir).parents[:-1]):
            refuse_link(audit_dir / part, "--runs-dir")  # a linked arm or scale folder
        refuse_link(run_dir, "--runs-dir")  # a linked seed folder: training would write outside
        old = read_json(run_dir / RUN_FILE)
        if old is not None and old.get("id") != run.run_id:
            stale_after_s = plan.spec.executor.stale_after_s
            _supersede(run_dir, old.get("id", "unknown"), run.run_id, stale_after_s)
            old = None
        run_dir.mkdir(parents=True, exist_ok=True)
        # same id: rewrite only operational changes (e.g. checkpoint cadence), never after DONE
        if old != run.to_json() and not (run_dir / DONE).exists():
            write_json(run_dir / RUN_FILE, run.to_json())
        dirs.append(run_dir)
    return dirs


def _supersede(run_dir: Path, old_id: str, new_id: str, stale_after_s: float) -> None:
    """Move aside a run the audit file no longer describes, unless a live claim holds it: one
    judged as `run` judges claims (`ClaimInfo.stale`, the audit's `--stale-after`), so a torn
    claim or another host's is taken over here when it would be in place."""
    claim = current_claim(run_dir)
    if claim is not None and not claim.stale(stale_after_s):
        raise ConfigError(
            f"{run_dir} holds run {old_id}, which the audit file no longer describes (now "
            f"{new_id}), and {claim.waiting_line(stale_after_s)}: run again then, or "
            "stop it"
        )
    audit_dir = run_dir.parents[2]
    dest = audit_dir / SUPERSEDED_DIR / f"{run_dir.relative_to(audit_dir)}-{old_id}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):  # another process moved it first
        run_dir.rename(dest)
        warn(f"{run_dir} held an older version of this run (id {old_id}); moved to {dest}")


# ---------------------------------------------------------------------------------------------
# reading


def read_spec(run_dir: Path) -> RunSpec:
    data = read_json(run_dir / RUN_FILE)
    if data is None:
        raise DataError(f"{run_dir} is not an audit run directory (no {RUN_FILE})")
    for key, kind in _SPEC_TYPES.items():
        if not isinstance(data.get(key), kind) or (kind is int and isinstance(data[key], bool)):
            raise DataError(
                f"{run_dir / RUN_FILE}: {key} = {data.get(key)!r} is not a {kind.__name__}"
            )
    try:
        return RunSpec.from_json(data)
    except (KeyError, TypeError, ConfigError) as err:  # edited by hand, or another version's
        raise DataError(
            f"{run_dir / RUN_FILE} is not a run spec ({type(err).__name__}: {err})"
        ) from None


_SPEC_TYPES: dict[str, type] = dict.fromkeys(("arm", "mods", "baseline", "family", "scale"), str)
_SPEC_TYPES |= {"seed": int, "path": str, "suite": str, "model": dict, "recipe": dict}
"""The RunSpec fields that the store sorts, groups and exports by."""


@dataclass(frozen=True)
class RunStatus:
    path: Path
    spec: RunSpec
    state: str
    """One of STATES."""
    step: int
    """Last training step in metrics.jsonl."""
    result: RunRecord | None
    """The DONE record."""
    error: str | None
    claim: ClaimInfo | None


def read_record(run_dir: Path) -> RunRecord | None:
    """The run's DONE record, or None before it finished; a garbled DONE raises DataError."""
    data = read_json(run_dir / DONE)
    return None if data is None else RunRecord.from_json(data, run_dir / DONE)


def read_done(run_dir: Path, spec: RunSpec) -> tuple[RunRecord | None, str | None]:
    """(the DONE record, None), or (None, why) when DONE is garbled or holds another run's
    result (a directory copied or reused by hand): that result is never reported as this
    run's."""
    try:
        done = read_record(run_dir)
    except DataError as err:
        return None, str(err)
    if done is not None and done.id != spec.run_id:
        return None, (
            f"{run_dir} holds the result of run {done.id} in {DONE}, not of run "
            f"{spec.run_id} that its {RUN_FILE} describes"
        )
    return done, None


def read_finished(run_dir: Path, spec: RunSpec) -> RunRecord | None:
    """The DONE record of the run `spec` describes; None before it finished, and None when the
    folder holds a garbled result or another run's (trained with another recipe, model or
    seed): a plan never counts, reuses or judges that as its own."""
    return read_done(run_dir, spec)[0]


def run_status(
    run_dir: Path, stale_after_s: float = 120.0, *, spec: RunSpec | None = None
) -> RunStatus:
    """Where one run stands; `spec` saves re-reading run.json when the caller has it."""
    spec = spec or read_spec(run_dir)
    result, foreign = read_done(run_dir, spec)
    claim = current_claim(run_dir) if result is None else None
    failed = run_dir / FAILED
    error = foreign or (failed.read_text(errors="replace") if failed.is_file() else None)
    if result is not None:
        state = "diverged" if result.status == ResultStatus.DIVERGED else "done"
    elif claim is not None:
        state = "stale" if claim.stale(stale_after_s) else "running"
    else:
        state = "failed" if error is not None else "planned"
    return RunStatus(run_dir, spec, state, last_step(run_dir / METRICS), result, error, claim)


def last_step(metrics: Path) -> int:
    """The step of the last complete line of metrics.jsonl (read from the end; 0 when it is
    missing or not a regular file: a FIFO there is never waited on)."""
    try:
        with open_regular(metrics) as f:
            f.seek(max(0, f.seek(0, io.SEEK_END) - 4096))
            lines = f.read().splitlines()
    except (FileNotFoundError, DataError):
        return 0
    for line in reversed(lines):
        with contextlib.suppress(ValueError, RecursionError, AttributeError, TypeError):
            return int(json.loads(line).get("step", 0))  # a torn or garbled line is skipped
    return 0


def audit_run_dirs(audit_dir: Path) -> list[Path]:
    """Every run directory of an audit (not `_tune` or `_superseded`), sorted."""
    if not audit_dir.is_dir():
        raise DataError(f"{audit_dir} does not exist: the audit has not started (archaudit run)")
    return sorted(
        p.parent
        for top in audit_dir.iterdir()
        if top.is_dir() and not top.name.startswith(("_", "."))
        for p in top.rglob(RUN_FILE)
    )


# ---------------------------------------------------------------------------------------------
# results


def result_rows(status: RunStatus) -> Iterator[Row]:
    """The results table's rows of one finished run, from its DONE record alone (a DONE from
    before duties were kept takes them from run.json); NaN where a metric was not measured."""
    result = status.result
    if result is None:
        return
    where = str(status.path / DONE)
    duties = check_duties(result.duties or status.spec.duties, where)
    for metric, value in sorted(result.metrics.items()):
        yield Row(
            arm=result.arm,
            scale=result.scale,
            seed=result.seed,
            metric=metric,
            value=float(value) if value is not None and math.isfinite(value) else math.nan,
            status=result.status,
            step=result.diverged_step,
            family=result.family or None,
            tuned=result.tuned,
            duties=duties,
            origin=where,
        )


def results_table(audit_dir: Path, statuses: Iterable[RunStatus]) -> Table:
    """The audit's results from its runs' DONE records, in (arm, scale, seed) order: what the
    tool judges and reports, and what `export` writes as results.csv (empty before any run
    finished)."""
    rows = (row for status in _in_order(statuses) for row in result_rows(status))
    return Table(tuple(rows), source=str(audit_dir))


def read_results(audit_dir: Path, statuses: Iterable[RunStatus] | None = None) -> Table:
    """The results table of an audit (its run directories scanned when `statuses` is None);
    EmptyTableError before any run finished, as an empty results.csv gives."""
    if statuses is None:
        statuses = [run_status(d) for d in audit_run_dirs(audit_dir)]
    table = results_table(audit_dir, statuses)
    if not table.rows:
        raise EmptyTableError(
            str(audit_dir), "no run of the audit has finished yet", "wait for a run to finish"
        )
    return table


def _in_order(statuses: Iterable[RunStatus]) -> list[RunStatus]:
    return sorted(statuses, key=lambda s: (s.spec.arm, s.spec.scale, s.spec.seed))


def item_rows(status: RunStatus) -> Iterator[dict[str, Any]]:
    """Per-item correctness (by each task's own metric), gold bits per byte and choice margin
    of one finished run (empty where a task, or an evals.json from before them, has none)."""
    evals = read_json(status.path / EVALS) if status.result is not None else None
    if not evals:
        return
    spec = status.spec
    for task, result in sorted(evals["tasks"].items()):
        key = "correct_norm" if result["metric"] == "acc_norm" else "correct"
        for item in result.get("items", []):
            yield {
                "arm": spec.arm,
                "scale": spec.scale,
                "seed": spec.seed,
                "task": task,
                "item": item["id"],
                "correct": int(bool(item[key])),
                "bpb": _cell(item.get("gold_bpb")),
                "margin": _cell(item.get("margin")),
            }


def _cell(value: float | None) -> str:
    """A measure as items.csv holds it: exact, and empty when absent or not finite."""
    return repr(float(value)) if value is not None and math.isfinite(value) else ""


def export(audit_dir: Path, statuses: Iterable[RunStatus] | None = None) -> Table:
    """Write results.csv (`results_table` as CSV, the `archaudit.stats` input for users) and
    items.csv from the run directories, and return that results table. A file that already
    holds these rows is left alone, so `stats` and `status` read a finished audit in a
    read-only folder, and concurrent readers rewrite nothing."""
    if statuses is None:
        statuses = [run_status(d) for d in audit_run_dirs(audit_dir)]
    statuses = _in_order(statuses)
    table = results_table(audit_dir, statuses)
    results = audit_dir / RESULTS_FILE
    items = audit_dir / ITEMS_FILE
    tables = (
        (results, table.to_csv(), lambda _: table),
        (items, csv_text(ITEM_COLUMNS, (r for s in statuses for r in item_rows(s))), load_items),
    )
    for path, text, load in tables:
        twin = _has_frames() and text.count("\n") > 1  # a table with rows has a Parquet twin
        if _holds(path, text) and (path.with_suffix(".parquet").exists() or not twin):
            continue
        atomic_write_text(path, text)
        parquet_twin(path, load)  # results.parquet, items.parquet: the `frames` extra
    return table


def _holds(path: Path, text: str) -> bool:
    try:
        return not path.is_symlink() and path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def _has_frames() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("pandas", "pyarrow"))


FINISHED_STATES = ("done", "diverged")


def refresh_export(audit_dir: Path) -> list[RunStatus]:
    """Scan the run directories and export results.csv and items.csv from them now (a running
    coordinator exports only as its runs finish). Returns the scanned statuses."""
    statuses = [run_status(d) for d in audit_run_dirs(audit_dir)]
    export(audit_dir, statuses)
    return statuses


def state_counts(statuses: Iterable[RunStatus]) -> dict[str, int]:
    """How many runs are in each state, sorted by state."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status.state] = counts.get(status.state, 0) + 1
    return dict(sorted(counts.items()))
