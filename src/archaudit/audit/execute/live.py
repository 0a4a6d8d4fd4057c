"""What an audit looks like while it runs: a per-arm table and an overall progress bar with ETA
on a terminal, one log line per finished run elsewhere, with the time since the command started
and the time left in the round at its pace so far. Everything is read from the run
directories, so the view is the same whichever executor (or machine) does the work."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from rich.console import Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from archaudit.audit.grid.plan import RunSpec
from archaudit.audit.grid.store import RUN_FILE, STATES, RunStatus, read_spec, run_status
from archaudit.metrics import PRIMARY_LOSS
from archaudit.progress import clock, console, elapsed, log

FINAL = ("done", "diverged", "failed")


def arm_table(statuses: Sequence[RunStatus], title: str = "") -> Table:
    """One row per arm: how many of its runs are in each state, and its mean val_loss so far."""
    by_arm: dict[str, list[RunStatus]] = defaultdict(list)
    for status in statuses:
        by_arm[status.spec.arm].append(status)
    table = Table(title=title or None)
    table.add_column("arm")
    for state in STATES:
        table.add_column(state, justify="right")
    table.add_column(PRIMARY_LOSS, justify="right")
    for arm, runs in by_arm.items():
        counts = Counter(s.state for s in runs)
        done = [s.result for s in runs if s.result and s.state == "done"]
        losses = [v for record in done if (v := record.metric(PRIMARY_LOSS)) is not None]
        mean = f"{sum(losses) / len(losses):.4f}" if losses else "-"
        table.add_row(arm, *(str(counts[state] or "") for state in STATES), mean)
    return table


def timing(total_s: float, round_s: float, steps_done: int, steps_left: int) -> str:
    """What a log line says of time where no progress bar is drawn (output piped): the time
    since the command started and, once this round has trained some steps, the time left in
    it at this round's pace, e.g. "elapsed 1:42; about 0:58 left in this round"."""
    said = f"elapsed {clock(total_s)}"
    if steps_done <= 0 or round_s <= 0:
        return said
    return f"{said}; about {clock(steps_left * round_s / steps_done)} left in this round"


def progress_of(statuses: Sequence[RunStatus]) -> tuple[int, int]:
    """(training steps done, steps planned) over all runs; a finished run counts in full."""
    done = sum(s.spec.recipe.steps if s.state in FINAL else s.step for s in statuses)
    return done, sum(s.spec.recipe.steps for s in statuses)


class StatusReader:
    """`run_status` for a set of run directories, re-reading only what can have changed:
    run.json is parsed again only when its modification time or size changes, and a finished
    run (DONE) is not read again at all. What is left per look is a few small files, so a
    coordinator that looks every second costs next to nothing while its workers train."""

    def __init__(self, run_dirs: Sequence[Path], stale_after_s: float) -> None:
        self.run_dirs, self.stale_after_s = list(run_dirs), stale_after_s
        self._specs: dict[Path, tuple[tuple[int, int], RunSpec]] = {}
        self._final: dict[Path, RunStatus] = {}

    def read(self) -> list[RunStatus]:
        return [self._final.get(d) or self._read(d) for d in self.run_dirs]

    def _read(self, run_dir: Path) -> RunStatus:
        stat = (run_dir / RUN_FILE).stat()
        signature = (stat.st_mtime_ns, stat.st_size)
        cached = self._specs.get(run_dir)
        if cached is None or cached[0] != signature:
            cached = self._specs[run_dir] = (signature, read_spec(run_dir))
        status = run_status(run_dir, self.stale_after_s, spec=cached[1])
        if status.state in ("done", "diverged"):
            self._final[run_dir] = status
        return status


class AuditMonitor:
    """Watch run directories in a background thread while an executor works."""

    def __init__(self, run_dirs: Sequence[Path], *, stale_after_s: float, live: bool) -> None:
        self._reader = StatusReader(run_dirs, stale_after_s)
        self._live = live and console.is_terminal
        self._stop = threading.Event()
        self._seen: dict[Path, str] = {}
        self._start = (time.monotonic(), 0)
        """When this round's watch began, and its training steps done then."""
        self._bar = Progress(
            TextColumn("[bold]audit"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("steps  ETA"),
            TimeRemainingColumn(),
            console=console,
        )
        self._task = self._bar.add_task("audit", total=None)
        self._thread = threading.Thread(target=self._watch, name="audit-monitor", daemon=True)

    def snapshot(self) -> list[RunStatus]:
        return self._reader.read()

    def render(self) -> Group:
        statuses = self.snapshot()
        done, total = progress_of(statuses)
        self._bar.update(self._task, completed=done, total=total)
        return Group(arm_table(statuses), self._bar)

    def _watch(self) -> None:
        if self._live:
            with Live(get_renderable=self.render, console=console, refresh_per_second=2):
                self._stop.wait()
            return
        self._log_finished()
        while not self._stop.wait(1.0):
            self._log_finished()

    def _log_finished(self) -> None:
        statuses = self.snapshot()
        done, total = progress_of(statuses)
        began, done_then = self._start
        pace = timing(elapsed(), time.monotonic() - began, done - done_then, total - done)
        for s in statuses:
            if s.state in FINAL and self._seen.get(s.path) != s.state:
                self._seen[s.path] = s.state
                loss = s.result.metric(PRIMARY_LOSS) if s.result else None
                detail = f" val_loss {loss:.4f}" if isinstance(loss, float) else ""
                where = f"[{len(self._seen)}/{len(statuses)}] {s.spec.path}"
                log(f"{where}: {s.state}{detail} ({pace})")

    def __enter__(self) -> AuditMonitor:
        statuses = self.snapshot()
        self._seen = {s.path: s.state for s in statuses if s.state in FINAL}
        self._start = (time.monotonic(), progress_of(statuses)[0])
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        if not self._live:
            self._log_finished()
