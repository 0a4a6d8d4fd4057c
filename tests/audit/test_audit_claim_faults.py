"""Issue 57, item 10: claims that are not what they should be never keep `run` waiting in
silence or forever. A FIFO named `claim.0` blocked `run` in open(); a claim of another host
with a heartbeat in the future kept it waiting without a word; a claim nested thousands deep
was a RecursionError traceback; and in an audit whose runs moved aside (their ids changed, as
in a copied audit) a torn claim or another host's was a refusal for good, while in place it
was taken over. Now every claim is judged by the age limit `--stale-after` (the audit's
`executor.stale_after_s`, 120 s by default) the same everywhere, and `run` names the claim it
waits on and when it takes it over."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from audit_helpers import alarm_after

from archaudit.audit.execute.coordinator import say_waiting
from archaudit.audit.execute.runner import run_one
from archaudit.audit.grid.claims import current_claim, try_claim
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.store import SUPERSEDED_DIR, materialize, run_status
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import main
from archaudit.errors import ConfigError
from archaudit.rundir import DONE

YEAR_S = 365 * 24 * 3600.0
LIMIT_S = 120.0


def claim_file(run_dir: Path, *, host: str = "elsewhere", pid: int = 4242, at: float) -> Path:
    """claim.0 naming `pid` on `host`, its heartbeat (file time) at `at`."""
    path = run_dir / "claim.0"
    path.write_text(json.dumps({"pid": pid, "host": host, "started": at}))
    os.utime(path, (at, at))
    return path


def test_a_fifo_claim_is_never_opened_for_a_writer_and_is_taken_over(tmp_path: Path):
    path = tmp_path / "claim.0"
    os.mkfifo(path)
    old = time.time() - 2 * 3600
    os.utime(path, (old, old))
    with alarm_after(30):
        claim = current_claim(tmp_path)
        assert claim is not None and claim.pid == -1 and "names no owner" in claim.owner()
        assert claim.stale(LIMIT_S)
        taken = try_claim(tmp_path, LIMIT_S)
    assert taken is not None and taken.path.name == "claim.1"
    assert not path.exists(), "the stale FIFO claim was replaced by the new generation"
    taken.release()


def test_a_deeply_nested_claim_names_nobody(tmp_path: Path):
    path = tmp_path / "claim.0"
    path.write_text("[" * 100_000 + "]" * 100_000)
    claim = current_claim(tmp_path)
    assert claim is not None and claim.pid == -1 and not claim.host
    assert not claim.stale(LIMIT_S), "a fresh file: judged by its time, a claim being written"


@pytest.mark.parametrize("ahead_s", [YEAR_S, 2 * LIMIT_S])
def test_a_heartbeat_further_ahead_than_the_limit_is_stale(tmp_path: Path, ahead_s: float):
    now = time.time()
    claim_file(tmp_path, at=now + ahead_s)
    claim = current_claim(tmp_path)
    assert claim is not None and claim.stale(LIMIT_S, now)
    assert "in the future" in claim.waiting_line(LIMIT_S, now)


def test_a_heartbeat_a_little_ahead_is_taken_over_within_twice_the_limit(tmp_path: Path):
    now = time.time()
    claim_file(tmp_path, at=now + 60)
    claim = current_claim(tmp_path)
    assert claim is not None and not claim.stale(LIMIT_S, now)
    assert claim.takeover_in(LIMIT_S, now) == pytest.approx(180.0)
    assert claim.stale(LIMIT_S, now + 181)
    line = claim.waiting_line(LIMIT_S, now)
    assert line.startswith("pid 4242 on elsewhere holds it (heartbeat 60 s in the future)"), line
    assert "taken over in 180 s" in line and "--stale-after 120" in line


@pytest.fixture
def run_dirs(write_audit) -> list[Path]:
    plan = make_plan(load_audit(write_audit(arms=[]), ["recipe.steps=2", "seeds.noise_floor=2"]))
    return materialize(plan)


def test_an_unfinished_runs_fifo_claim_and_metrics_are_read_without_waiting(run_dirs):
    for name in ("claim.0", "metrics.jsonl"):
        os.mkfifo(run_dirs[0] / name)
    with alarm_after(30):
        status = run_status(run_dirs[0], LIMIT_S)
    assert status.state == "running" and status.step == 0  # a fresh file: judged by its time


def test_run_one_takes_over_another_hosts_claim_from_the_future(run_dirs: list[Path]):
    claim_file(run_dirs[0], at=time.time() + YEAR_S)
    assert run_status(run_dirs[0]).state == "stale"
    assert run_one(run_dirs[0]) == "done"
    assert (run_dirs[0] / DONE).is_file() and not list(run_dirs[0].glob("claim.*"))


def test_run_names_the_claim_it_waits_on_once(run_dirs: list[Path], capsys):
    claim_file(run_dirs[0], at=time.time())
    statuses = [run_status(d, LIMIT_S) for d in run_dirs]
    capsys.readouterr()
    announced: set[Path] = set()
    for _ in range(2):
        say_waiting(statuses, announced, LIMIT_S, run_dirs[0].parents[2])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(
        "warning: waiting for baseline/xs/seed-0: pid 4242 on elsewhere holds"
    ), line
    assert "taken over in 120 s unless its heartbeat moves (--stale-after 120)" in line, line


@pytest.mark.parametrize("owner", [{"pid": -1, "host": "x"}, {"pid": 4242, "host": "elsewhere"}])
def test_a_moved_run_is_judged_by_the_same_limit_as_in_place(write_audit, owner: dict):
    """Runs whose id changed move aside (a copied or edited audit); a torn claim or another
    host's, two hours without a heartbeat, no longer refuses that for good."""
    audit = write_audit(arms=[])
    old = materialize(make_plan(load_audit(audit, ["recipe.steps=2"])))[0]
    claim_file(old, at=time.time() - 2 * 3600, **owner)
    assert run_status(old, LIMIT_S).state == "stale"  # in place: taken over
    materialize(make_plan(load_audit(audit, ["recipe.steps=3"])))  # moved aside, no refusal
    assert list((old.parents[2] / SUPERSEDED_DIR).rglob("claim.0"))


def test_a_live_claim_on_a_moved_run_says_when_it_is_taken_over(write_audit):
    audit = write_audit(arms=[])
    old = materialize(make_plan(load_audit(audit, ["recipe.steps=2"])))[0]
    claim_file(old, at=time.time())
    with pytest.raises(ConfigError, match=r"pid 4242 on elsewhere holds it .*taken over in"):
        materialize(make_plan(load_audit(audit, ["recipe.steps=3"])))


@pytest.mark.parametrize("command", ["run", "demo", "tune-baseline", "stress"])
def test_every_command_that_trains_has_the_age_limit(command: str, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["archaudit", command, "--help"])
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main()
    assert "--stale-after" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-5"])
def test_the_age_limit_is_a_finite_number_above_the_heartbeat(write_audit, value: str):
    with pytest.raises(ConfigError, match=r"executor.stale_after_s"):
        load_audit(write_audit(arms=[]), [f"executor.stale_after_s={value}"])
