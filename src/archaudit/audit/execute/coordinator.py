"""`run_audit`: bring every run of a plan to DONE, whatever happened before.

The loop reads the run directories, hands the runs nobody is working on to the executor, waits
for runs another worker (or another `archaudit run`) holds, and takes over runs whose worker
died. Run it again after a crash, on another machine, or twice at once: each run is executed
exactly once, and finished runs are never retrained.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from archaudit.audit.execute.dispatch import longest_first
from archaudit.audit.execute.live import AuditMonitor
from archaudit.audit.execute.trackers import check_tracker, track_verdicts
from archaudit.audit.grid import store
from archaudit.audit.grid.claims import clear_stale
from archaudit.audit.grid.plan import Plan
from archaudit.audit.launcher.executors import Interrupted, LocalExecutor, make_executor
from archaudit.audit.launcher.launch import RunOptions, sigterm_as_interrupt
from archaudit.audit.setup.protocol import warn_notes
from archaudit.audit.setup.spec import ExecutorSpec
from archaudit.rundir import checkpoint_dirs, checkpoint_step

WAIT_S = 1.0
SEED_NOTE = "seed"
"""The rule of the notes that record seeds a sequential audit added
(audit/execute/sequential.py)."""


@dataclass(frozen=True)
class AuditOutcome:
    audit_dir: Path
    counts: dict[str, int]
    """Runs per final state (done, diverged, failed)."""
    failed: dict[str, str]
    """Run path → what went wrong."""
    results: Path


def run_audit(
    plan: Plan,
    *,
    executor: str | None = None,
    workers: int | None = None,
    tracker: str | None = None,
    live: bool = True,
    warn: bool = True,
    export: bool = True,
) -> AuditOutcome:
    """Run (or resume) the whole audit; `executor`, `workers` and `tracker` override the file.
    `warn=False` keeps the protocol notes quiet (a later round of a sequential audit);
    `export=False` leaves results.csv to the caller (the sequential loop writes it once, at its
    end, not between rounds while no run is in flight: 0.3 s of CPU each)."""
    settings = plan.spec.executor
    settings = dataclasses.replace(
        settings, kind=executor or settings.kind, workers=workers or settings.workers
    )
    tracker = plan.spec.tracker if tracker is None else tracker
    if tracker:
        check_tracker(tracker)
    pool = make_executor(settings, plan.audit_dir)  # a bad name fails before anything is written
    if warn:
        warn_notes([note for note in plan.notes if note.rule != SEED_NOTE])  # seeds: a record
    run_dirs = store.materialize(plan)
    options = RunOptions(
        threads=pool.threads,
        ranks=settings.ranks,
        tracker=tracker,
        heartbeat_s=settings.heartbeat_s,
        stale_after_s=settings.stale_after_s,
    )
    launches: Counter[Path] = Counter()
    announced: set[Path] = set()  # the claims waited on that a line has named
    try:
        with (
            sigterm_as_interrupt(),
            AuditMonitor(run_dirs, stale_after_s=settings.stale_after_s, live=live) as monitor,
        ):
            if isinstance(pool, LocalExecutor):  # re-ranked as runs finish (round 1 has no times)
                pool.order = lambda queue: longest_first(queue, monitor.snapshot())
            while True:
                statuses = monitor.snapshot()
                todo = [s.path for s in statuses if _runnable(s, launches[s.path], settings)]
                if todo:
                    launches.update(todo)
                    pool.execute(longest_first(todo, statuses), options)
                elif any(s.state == "running" for s in statuses):
                    say_waiting(statuses, announced, settings.stale_after_s, plan.audit_dir)
                    time.sleep(WAIT_S)  # another worker holds these runs: wait for it
                else:
                    break
    except Interrupted as stop:
        say_what_was_saved(stop, plan.audit_dir)
        raise
    outcome = _outcome(plan, run_dirs, settings.stale_after_s, export)
    if tracker:
        _track_verdicts(tracker, plan)
    return outcome


def _outcome(plan: Plan, run_dirs: list[Path], stale_after_s: float, export: bool) -> AuditOutcome:
    """Where the planned runs ended (results.csv exported from them with `export`); a finished
    run's leftover claim is cleared (its worker was killed between DONE and the release)."""
    if export:
        planned = set(run_dirs)
        statuses = [s for s in store.refresh_export(plan.audit_dir) if s.path in planned]
    else:
        statuses = [store.run_status(run_dir, stale_after_s) for run_dir in run_dirs]
    finished = ("done", "diverged")
    failed = {
        s.spec.path: (s.error or "exited without a result; see run-one.log").splitlines()[0]
        for s in statuses
        if s.state not in finished
    }
    for s in statuses:
        if s.state in finished:
            clear_stale(s.path, stale_after_s)
    counts = Counter(s.state if s.state in finished else "failed" for s in statuses)
    return AuditOutcome(plan.audit_dir, dict(counts), failed, plan.audit_dir / store.RESULTS_FILE)


def _track_verdicts(tracker: str, plan: Plan) -> None:
    """The verdicts as the audit's own tracker run (`trackers.track_verdicts`)."""
    track_verdicts(tracker, plan.spec.name, plan.audit_dir)


def say_waiting(
    statuses: list[store.RunStatus], announced: set[Path], stale_after_s: float, audit_dir: Path
) -> None:
    """One line per claim that `run` waits on (the first time it does): whose it is, and when it
    is taken over unless its heartbeat moves. Every running claim is another process's here:
    this coordinator's own launches have all exited."""
    from archaudit.progress import warn

    for s in statuses:
        if s.state == "running" and s.claim is not None and s.claim.path not in announced:
            announced.add(s.claim.path)
            where = s.path.relative_to(audit_dir)
            warn(f"waiting for {where}: {s.claim.waiting_line(stale_after_s)}")


def say_what_was_saved(stop: Interrupted, audit_dir: Path) -> None:
    """One line per run that was stopped: the step its checkpoint holds, where a rerun goes on."""
    from archaudit.progress import log, warn

    how = "Ctrl-C" if stop.signal_name == "SIGINT" else stop.signal_name
    if stop.aborted:
        warn(f"{how}, then a second interrupt: the workers were killed before saving")
    else:
        log(f"{how}: every running worker saved its current step")
    for run_dir in stop.stopped:
        checkpoints = checkpoint_dirs(run_dir)
        step = checkpoint_step(checkpoints[-1]) if checkpoints else None
        where = f"saved at step {step}" if step else "no checkpoint yet: restarts at step 0"
        log(f"  {run_dir.relative_to(audit_dir)}: {where}")


def _runnable(status: store.RunStatus, launches: int, settings: ExecutorSpec) -> bool:
    """Nobody works on it, and this session has launches left for it (a run that failed
    before this session is retried once; one that failed in it is not)."""
    if launches >= settings.max_attempts:
        return False
    return status.state in ("planned", "stale") or (status.state == "failed" and not launches)
