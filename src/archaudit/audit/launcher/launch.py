"""How a run is launched: the `archaudit` command line for this interpreter and the operational
`RunOptions` every executor passes to `run-one`. Below the runner and the executors, which both
need them."""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from archaudit.config.recipe import MAX_THREADS
from archaudit.errors import ConfigError
from archaudit.ranges import Range

CLI_MODULE = "archaudit.cli"
"""The command line's package: `python -m archaudit.cli` is `archaudit`."""


def cli_command(*args: str) -> list[str]:
    """`archaudit ARGS...` as an argv for this interpreter (executors, torchrun, tests)."""
    return [sys.executable, "-m", CLI_MODULE, *args]


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How to run (never what): operational settings an executor passes to `run-one`."""

    threads: int = field(default=0, metadata={"range": Range(0, MAX_THREADS)})
    """torch threads (0 = the recipe's, i.e. torch's default)."""
    device: str = ""
    """Overrides recipe.device ("" = keep)."""
    ranks: int = field(default=1, metadata={"range": Range(1, MAX_THREADS)})
    """Processes for this run; > 1 launches the training under torchrun."""
    tracker: str = ""
    """Mirror the run to tensorboard | wandb | mlflow (each its own extra); "" = none."""
    heartbeat_s: float = field(
        default=15.0, metadata={"flag": "--heartbeat", "range": Range(0, low_open=True)}
    )
    """Seconds between the run's heartbeats (its claim's proof of life)."""
    stale_after_s: float = field(
        default=120.0, metadata={"flag": "--stale-after", "range": Range(0, low_open=True)}
    )
    """A claim whose heartbeat is older than this many seconds is taken over."""

    def __post_init__(self) -> None:
        if not 0 <= self.threads <= MAX_THREADS:
            raise ConfigError(f"--threads {self.threads} must be in [0, {MAX_THREADS}]")
        if not 1 <= self.ranks <= MAX_THREADS:
            raise ConfigError(f"--ranks {self.ranks} must be in [1, {MAX_THREADS}]")
        if not 0 < self.heartbeat_s < self.stale_after_s < math.inf:
            raise ConfigError(
                f"--heartbeat {self.heartbeat_s} must be > 0 and below --stale-after "
                f"{self.stale_after_s} (seconds)"
            )

    def to_args(self) -> list[str]:
        """The `run-one` options that reproduce these settings in another process."""
        return [
            f"--threads={self.threads}",
            f"--device={self.device}",
            f"--ranks={self.ranks}",
            f"--tracker={self.tracker}",
            f"--heartbeat={self.heartbeat_s}",
            f"--stale-after={self.stale_after_s}",
        ]


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C (KeyboardInterrupt("SIGTERM")): a worker checkpoints and
    releases its claim, a coordinator stops its workers the same way, also when it runs in the
    background with SIGINT ignored. Only the main thread can install the handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def die_with_parent(parent: int) -> None:
    """Linux: this process gets SIGKILL when `parent` dies, so no orphan keeps training (its
    claim then goes stale at once, and a rerun resumes it from its checkpoint)."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)
