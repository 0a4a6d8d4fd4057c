"""Issue 10, must-show 3: a real tiny audit under `run --until-settled`, killed with SIGKILL in
the middle of a round and rerun, ends with the same seeds and verdicts as an uninterrupted one."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from audit_helpers import TINY, archaudit, merged, to_toml

from archaudit.audit.execute.sequential import RECORD_DIR, SUMMARY, read_rounds
from archaudit.audit.grid.store import DONE, RESULTS_FILE
from archaudit.audit.launcher.launch import cli_command

AUDIT = merged(
    TINY,
    {
        "arms": ["post_ln", "qk_norm"],
        "seeds": {"noise_floor": 2, "arms": 1, "policy": "sequential", "max": 3},
        "recipe": {"steps": 30, "checkpoint_every": 5, "eval_every": 15},
    },
)


def newest_checkpoint(run_dir: Path) -> int:
    steps = (int(c.name.split("-")[1]) for c in (run_dir / "checkpoint").glob("step-*"))
    return max(steps, default=0)


def round_two_in_training(audit_dir: Path) -> bool:
    """Round 1 is published and one of its added runs has a checkpoint but no result yet."""
    rounds = read_rounds(audit_dir) if (audit_dir / RECORD_DIR).is_dir() else []
    if not rounds:
        return False
    added = [audit_dir / a.arm / a.scale / f"seed-{a.seed}" for a in rounds[0].added]
    return any(newest_checkpoint(d) > 0 and not (d / DONE).exists() for d in added)


@pytest.mark.slow
def test_sigkill_in_a_round_then_rerun_gives_the_same_seeds_and_verdicts(tmp_path: Path):
    audit_file = tmp_path / "audit.toml"
    audit_file.write_text(to_toml(AUDIT))
    reference = archaudit("run", str(audit_file), "--runs-dir", str(tmp_path / "a"), "-q")
    assert reference.returncode == 0, reference.stderr
    expected = tmp_path / "a" / "tiny"
    assert read_rounds(expected), "the reference audit added seeds"

    runs = tmp_path / "b"
    audit_dir = runs / "tiny"
    proc = subprocess.Popen(cli_command("run", str(audit_file), "--runs-dir", str(runs), "-q"))
    deadline = time.monotonic() + 600
    while not round_two_in_training(audit_dir):
        assert proc.poll() is None, "the audit finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # only the coordinator: its workers die with it
    proc.wait()
    assert not (audit_dir / RECORD_DIR / SUMMARY).exists(), "killed before the loop finished"

    rerun = archaudit("run", str(audit_file), "--runs-dir", str(runs), "-q")
    assert rerun.returncode == 0, rerun.stderr
    assert read_rounds(audit_dir) == read_rounds(expected)
    for name in (RECORD_DIR + "/" + SUMMARY, RESULTS_FILE):
        assert (audit_dir / name).read_text() == (expected / name).read_text(), name
