"""The one place that talks to the terminal: progress bars and log lines (on stderr).

Library code reports through `log` and `progress`; whether anything is drawn depends on whether
stderr is a terminal and on `set_quiet`, so library users and tests get silence by default
when output is piped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

console = Console(stderr=True)
_quiet = False
_STARTED = time.monotonic()
"""When this process imported the facade: its command's start, for the elapsed time that
log lines show where no progress bar is drawn."""


def elapsed() -> float:
    """Seconds since the command started (this module's import)."""
    return time.monotonic() - _STARTED


def clock(seconds: float) -> str:
    """Seconds as "m:ss" ("h:mm:ss" from an hour), as the progress bars write them."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def is_quiet() -> bool:
    return _quiet


def is_rank_zero() -> bool:
    """False on the other ranks of a torchrun launch: only rank 0 talks to the terminal."""
    return os.environ.get("RANK", "0") == "0"


def log(message: str, *, style: str | None = None) -> None:
    if not _quiet and is_rank_zero():
        console.print(message, style=style, highlight=False, soft_wrap=True)


def warn(message: str) -> None:
    """One line on stderr, never wrapped at the console's width (a reader greps it for the path
    it names) and never read as markup (a path may hold `[...]`)."""
    if is_rank_zero():
        console.print(
            f"warning: {message}", style="yellow", highlight=False, markup=False, soft_wrap=True
        )


class _Bar:
    def __init__(self, progress: Progress | None, task: TaskID | None) -> None:
        self._progress, self._task = progress, task

    # `Any`, as rich types a task's fields: they are the values `stats` formats.
    def update(self, advance: int = 0, **fields: Any) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=advance, **fields)


@contextmanager
def progress(
    description: str, total: int, *, completed: int = 0, stats: str = "", **fields: Any
) -> Iterator[_Bar]:
    """A progress bar with ETA; `stats` is a format string over `fields` (initial values, e.g.
    loss=float("nan")) that `update` refreshes, e.g. "loss {task.fields[loss]:.3f}".
    Drawn only on a terminal and when not quiet."""
    if _quiet or not console.is_terminal or not is_rank_zero():
        yield _Bar(None, None)
        return
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(stats),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(description, total=total, completed=completed, **fields)
        yield _Bar(bar, task)
