"""Claims: a run is executed by at most one worker, even across machines on a shared disk.

A claim is a file `claim.<generation>` in the run directory, created with O_EXCL (atomic on
local and NFS v3+ file systems) and holding the owner's pid, host and start time. The owner
touches it every `heartbeat_s` seconds. A claim is stale when its heartbeat is older than
`stale_after_s` (`--stale-after`), or lies further than that in the future (a clock that far
ahead is not believed: a heartbeat a year ahead kept `run` waiting forever), or at once when
its process is gone on this host; so every claim is taken over within `2 × stale_after_s`
of its last heartbeat, wherever it was written and whichever host it names. A stale claim is
taken over by creating the next generation, again with O_EXCL, so of two workers racing for
the takeover exactly one wins. An owner whose claim was taken over (its heartbeat stalled,
e.g. a paused process) finds a newer generation at its next heartbeat and exits without
writing anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from archaudit.errors import DataError
from archaudit.files import parse_json, read_regular_bytes
from archaudit.rundir import CLAIM_PREFIX

LOST_EXIT_CODE = 75  # EX_TEMPFAIL: the run is someone else's now


@dataclass(frozen=True)
class ClaimInfo:
    path: Path
    generation: int
    pid: int
    host: str
    started: float
    heartbeat: float

    def stale(self, stale_after_s: float, now: float | None = None) -> bool:
        return self.takeover_in(stale_after_s, now) <= 0.0

    def takeover_in(self, stale_after_s: float, now: float | None = None) -> float:
        """Seconds until the claim is stale if its heartbeat stops now (0: stale already): its
        heartbeat's age reaches `stale_after_s`. A heartbeat ahead of this clock by up to
        `stale_after_s` counts as written then (clocks of a shared disk's hosts differ a
        little); one further ahead, or a process gone from this host, is stale at once."""
        if self.host == socket.gethostname() and not _alive(self.pid):
            return 0.0
        age = (time.time() if now is None else now) - self.heartbeat
        if age < -stale_after_s:
            return 0.0
        return max(0.0, stale_after_s - age)

    def owner(self) -> str:
        """Who holds the claim, in words: `pid 12 on host-b`, or nobody for a torn claim."""
        if self.pid < 0 and not self.host:
            return f"nobody ({self.path.name} names no owner: torn, garbled or not a file)"
        return f"pid {self.pid} on {self.host or 'an unnamed host'}"

    def waiting_line(self, stale_after_s: float, now: float | None = None) -> str:
        """One line for a run waited on: whose claim, its heartbeat, when it is taken over."""
        now = time.time() if now is None else now
        age = now - self.heartbeat
        beat = f"{age:.0f} s ago" if age >= 0 else f"{-age:.0f} s in the future"
        left = self.takeover_in(stale_after_s, now)
        return (
            f"{self.owner()} holds it (heartbeat {beat}); taken over in {left:.0f} s unless "
            f"its heartbeat moves (--stale-after {stale_after_s:g})"
        )


def current_claim(run_dir: Path) -> ClaimInfo | None:
    """The newest claim on a run, or None."""
    generations = _generations(run_dir)
    while generations:
        gen = generations.pop()
        path = run_dir / f"{CLAIM_PREFIX}{gen}"
        try:
            heartbeat = path.stat().st_mtime
            owner = _owner(path)
        except FileNotFoundError:  # released meanwhile
            continue
        return ClaimInfo(path, gen, owner.pid, owner.host, owner.started, heartbeat)
    return None


@dataclass(frozen=True)
class _Owner:
    pid: int = -1
    host: str = ""
    started: float = 0.0


def _owner(path: Path) -> _Owner:
    """Who a claim file names. A file caught between create and write, torn, garbled, nested
    past `files.MAX_JSON_DEPTH` or not a regular file (a FIFO is never opened for a writer)
    names nobody: it is then judged by its file time alone (a fresh one is live, an old one
    stale), never treated as fresh forever."""
    try:
        owner = parse_json(read_regular_bytes(path), path)
    except DataError:
        return _Owner()
    if not isinstance(owner, dict):
        return _Owner()
    pid, host, started = owner.get("pid"), owner.get("host"), owner.get("started")
    return _Owner(
        pid if type(pid) is int else -1,
        host if isinstance(host, str) else "",
        float(started) if isinstance(started, int | float) and type(started) is not bool else 0.0,
    )


class Claim:
    """A held claim; `start_heartbeat` keeps it fresh in a daemon thread until `release`."""

    def __init__(self, path: Path, generation: int) -> None:
        self.path, self.generation = path, generation
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def still_held(self) -> bool:
        newest = current_claim(self.path.parent)
        return newest is not None and newest.generation == self.generation

    def start_heartbeat(self, interval_s: float) -> None:
        def beat() -> None:
            while not self._stop.wait(interval_s):
                if not self.still_held():
                    os._exit(LOST_EXIT_CODE)  # another worker owns the run: write nothing more
                with contextlib.suppress(FileNotFoundError):
                    os.utime(self.path)

        self._thread = threading.Thread(target=beat, name="claim-heartbeat", daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.still_held():
            self.path.unlink(missing_ok=True)


def try_claim(run_dir: Path, stale_after_s: float) -> Claim | None:
    """Claim the run, taking over a stale claim; None when a live worker holds it."""
    held = current_claim(run_dir)
    if held is not None and not held.stale(stale_after_s):
        return None
    generation = held.generation + 1 if held is not None else 0
    path = run_dir / f"{CLAIM_PREFIX}{generation}"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return None
    owner = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
    with os.fdopen(fd, "w") as f:
        json.dump(owner, f)
    claim = Claim(path, generation)
    if not claim.still_held():  # a newer generation appeared while we created ours
        path.unlink(missing_ok=True)
        return None
    if held is not None:
        held.path.unlink(missing_ok=True)
    return claim


def clear_stale(run_dir: Path, stale_after_s: float) -> None:
    """Remove a dead owner's claim, e.g. from a finished run: a worker killed between writing
    DONE and releasing its claim leaves one behind, and nobody claims a finished run again."""
    held = current_claim(run_dir)
    if held is not None and held.stale(stale_after_s):
        held.path.unlink(missing_ok=True)


def _generations(run_dir: Path) -> list[int]:
    if not run_dir.is_dir():
        return []
    found = []
    for entry in os.listdir(run_dir):
        suffix = entry[len(CLAIM_PREFIX) :]
        if entry.startswith(CLAIM_PREFIX) and suffix.isdigit():
            found.append(int(suffix))
    return sorted(found)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return True  # unknown owner: only the heartbeat can tell
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A killed worker stays a zombie until it is reaped, which a container's init may take a
    while to do; it holds its pid but will never heartbeat again (Linux /proc only)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")
