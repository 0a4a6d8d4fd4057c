"""Piped, an audit's log lines say how long it has run and how long the round has left (issue
57 finding 4: `archaudit demo > file` printed one line per finished run and no time at all,
while a terminal's progress bar shows both)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
from report_helpers import fake_audit

from archaudit.audit.execute.live import AuditMonitor, timing
from archaudit.audit.grid import store
from archaudit.progress import clock


def test_timing_says_elapsed_and_the_rounds_time_left_at_its_pace():
    assert timing(102.0, 60.0, 300, 150) == "elapsed 1:42; about 0:30 left in this round"
    assert timing(5.0, 0.0, 0, 900) == "elapsed 0:05"  # no pace yet: no estimate
    assert clock(3725) == "1:02:05" and clock(59.6) == "1:00"


def test_a_piped_monitor_logs_each_finished_run_with_its_times(tmp_path, capsys):
    audit = fake_audit(tmp_path, {"qk_norm": 0.0})
    run_dirs = store.audit_run_dirs(audit)
    held = {d: (d / store.DONE).read_bytes() for d in run_dirs[:2]}
    for run_dir in held:
        (run_dir / store.DONE).unlink()
    with AuditMonitor(run_dirs, stale_after_s=60.0, live=False):
        for run_dir, done in held.items():
            (run_dir / store.DONE).write_bytes(done)
    lines = [line for line in capsys.readouterr().err.splitlines() if ": done" in line]
    assert len(lines) == 2, lines
    for line in lines:
        assert re.search(r"\(elapsed \d+:\d\d(; about \d+:\d\d left in this round)?\)$", line), line
