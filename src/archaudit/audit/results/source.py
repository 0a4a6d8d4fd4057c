"""The one loader of results: an audit folder (its runs' DONE records), an audit file, a results
CSV or Parquet file, a folder holding one, a pandas DataFrame or a `Table`. `findings` (and so
`stats`, the report and the trackers) reads every source here and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from archaudit.audit.grid import store
from archaudit.audit.setup.spec import resolve_audit_dir
from archaudit.errors import DataError, did_you_mean_path
from archaudit.rundir import is_audit_dir
from archaudit.stats.records.errors import EmptyTableError
from archaudit.stats.records.frames import is_frame
from archaudit.stats.records.table import RESULTS_FILE, Table, load_table


class SourceKind(StrEnum):
    """Where a table came from: an audit's runs, a results file, or a table in memory."""

    AUDIT = "audit"
    CSV = "csv"
    FRAME = "frame"


@dataclass(frozen=True)
class Source:
    """A loaded source: its table (None for an audit with no finished run, read `partial`),
    the audit folder behind it, and what the reader must know (runs still unfinished)."""

    name: str
    """The source as given (an audit file stays its .toml: its [target] is read from it)."""
    kind: SourceKind
    table: Table | None
    audit_dir: Path | None
    results_path: Path | None
    """The results file read, or the audit's export (its CSV)."""
    notes: tuple[str, ...] = ()
    empty: str = ""
    """Why `table` is None (a partial source)."""


def load_source(source: str | Path | Any, *, partial: bool = False) -> Source:
    """Read SOURCE. An audit is read from its runs' DONE records (its results.csv export is
    refreshed on the way, where the folder is writable), with a note on the runs not finished;
    before any run finished it is an error, or with `partial` a source without a table."""
    if isinstance(source, Table) or is_frame(source):
        table = load_table(source)
        return Source(table.source, SourceKind.FRAME, table, None, None)
    path = Path(source)
    folder = resolve_audit_dir(path) if path.suffix == ".toml" else path
    if is_audit_dir(folder):
        return _audit(str(path), folder, partial)
    if _stress_only(folder):
        why = EmptyTableError(
            str(folder), "only its stress test has run", "`archaudit run AUDIT` trains the audit"
        )
        if not partial:
            raise why
        return Source(
            str(path), SourceKind.AUDIT, None, folder, folder / RESULTS_FILE, empty=str(why)
        )
    if not folder.exists():
        raise DataError(
            f"{path} does not exist{did_you_mean_path(path)}: give an audit directory, file or "
            "results CSV"
        )
    csv = folder / RESULTS_FILE if folder.is_dir() else folder
    return Source(str(path), SourceKind.CSV, load_table(csv), None, csv)


def _stress_only(folder: Path) -> bool:
    """A folder `archaudit stress` filled before `archaudit run` (its `_stress/` alone)."""
    from archaudit.audit.stability.stress import STRESS_DIR
    from archaudit.audit.stability.stress_result import RESULT_FILE

    return (folder / STRESS_DIR / RESULT_FILE).is_file()


def _audit(name: str, audit_dir: Path, partial: bool) -> Source:
    statuses = [store.run_status(d) for d in store.audit_run_dirs(audit_dir)]
    counts = store.state_counts(statuses)
    finished = sum(counts.get(state, 0) for state in store.FINISHED_STATES)
    open_runs = {state: n for state, n in counts.items() if state not in store.FINISHED_STATES}
    states = ", ".join(f"{n} {state}" for state, n in open_runs.items())
    csv = audit_dir / RESULTS_FILE
    if not finished:
        empty = EmptyTableError(
            str(audit_dir),
            f"no run of the audit has finished yet ({states})",
            f"`archaudit status {audit_dir}` shows how far they are",
        )
        if not partial:
            raise empty
        return Source(name, SourceKind.AUDIT, None, audit_dir, csv, empty=str(empty))
    try:
        table = store.export(audit_dir, statuses)
    except OSError:  # a read-only folder: judged from the records all the same
        table = store.results_table(audit_dir, statuses)
    total = sum(counts.values())
    note = (
        f"{total - finished} of {total} runs unfinished ({states}): the verdicts cover the "
        f"{finished} finished runs only, and arms without a finished run are missing"
    )
    notes = (note,) if open_runs else ()
    return Source(name, SourceKind.AUDIT, table, audit_dir, csv, notes)
