"""Claims: one worker per run, a crashed worker's claim is taken over, racing takers get one win."""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from archaudit.audit.grid import claims
from archaudit.audit.grid.claims import LOST_EXIT_CODE, current_claim, try_claim

STALE_AFTER = 5.0


def fake_claim(run_dir: Path, generation: int, *, pid: int, host: str, age: float) -> Path:
    path = run_dir / f"claim.{generation}"
    path.write_text(json.dumps({"pid": pid, "host": host, "started": time.time() - age}))
    os.utime(path, (time.time() - age, time.time() - age))
    return path


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_live_claim_excludes_everyone_else(tmp_path: Path):
    claim = try_claim(tmp_path, STALE_AFTER)
    assert claim is not None
    assert try_claim(tmp_path, STALE_AFTER) is None
    claim.release()
    assert current_claim(tmp_path) is None
    assert try_claim(tmp_path, STALE_AFTER) is not None


def test_a_dead_workers_claim_is_taken_over_at_once(tmp_path: Path):
    old = fake_claim(tmp_path, 3, pid=dead_pid(), host=socket.gethostname(), age=0)
    claim = try_claim(tmp_path, STALE_AFTER)
    assert claim is not None and claim.generation == 4
    assert not old.exists()


def test_a_killed_worker_that_is_not_reaped_yet_counts_as_dead(tmp_path: Path):
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # exits; we do not reap it yet
    while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    fake_claim(tmp_path, 0, pid=zombie.pid, host=socket.gethostname(), age=0)
    assert try_claim(tmp_path, STALE_AFTER) is not None
    zombie.wait()


def test_clear_stale_removes_a_dead_owners_claim_and_keeps_a_live_one(tmp_path: Path):
    """A worker killed between DONE and its release leaves a claim; the audit clears it."""
    dead = fake_claim(tmp_path, 0, pid=dead_pid(), host=socket.gethostname(), age=0)
    claims.clear_stale(tmp_path, STALE_AFTER)
    assert not dead.exists()
    live = fake_claim(tmp_path, 0, pid=os.getpid(), host=socket.gethostname(), age=0)
    claims.clear_stale(tmp_path, STALE_AFTER)
    assert live.exists()


def test_a_silent_claim_from_another_host_goes_stale(tmp_path: Path):
    fake_claim(tmp_path, 0, pid=1, host="elsewhere", age=STALE_AFTER / 2)
    assert try_claim(tmp_path, STALE_AFTER) is None, "a recent heartbeat is respected"
    fake_claim(tmp_path, 0, pid=1, host="elsewhere", age=STALE_AFTER * 2)
    assert try_claim(tmp_path, STALE_AFTER) is not None


def _race(run_dir: str, barrier, wins) -> None:
    barrier.wait()
    claim = try_claim(Path(run_dir), STALE_AFTER)
    if claim is not None:
        wins.put(os.getpid())
        time.sleep(0.5)  # hold it while the others look


def race(run_dir: Path, racers: int) -> int:
    ctx = multiprocessing.get_context("fork")
    barrier, wins = ctx.Barrier(racers), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(str(run_dir), barrier, wins)) for _ in range(racers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    count = 0
    while not wins.empty():
        wins.get()
        count += 1
    return count


def test_racing_workers_get_exactly_one_claim(tmp_path: Path):
    assert race(tmp_path, 8) == 1


def test_racing_takeovers_of_a_stale_claim_get_exactly_one(tmp_path: Path):
    fake_claim(tmp_path, 0, pid=1, host="elsewhere", age=STALE_AFTER * 2)
    assert race(tmp_path, 8) == 1


HOLDER = """
import sys, time
from pathlib import Path
from archaudit.audit.grid.claims import try_claim
claim = try_claim(Path(sys.argv[1]), 5.0)
claim.start_heartbeat(0.05)
print("held", flush=True)
time.sleep(30)
"""


def test_a_worker_whose_claim_was_taken_over_stops(tmp_path: Path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    newest = current_claim(tmp_path)
    fake_claim(tmp_path, newest.generation + 1, pid=1, host="elsewhere", age=0)
    assert holder.wait(timeout=10) == LOST_EXIT_CODE


def test_two_takers_that_both_saw_a_free_run_get_one_claim(tmp_path: Path, monkeypatch):
    """The race window made deterministic: both look before either creates its claim file."""
    real = claims.current_claim
    looks = iter([None, real, None, real])  # A looks, A verifies, B looks, B verifies

    def current(run_dir: Path):
        answer = next(looks)
        return answer(run_dir) if callable(answer) else answer

    monkeypatch.setattr(claims, "current_claim", current)
    first, second = try_claim(tmp_path, STALE_AFTER), try_claim(tmp_path, STALE_AFTER)
    assert first is not None and second is None
