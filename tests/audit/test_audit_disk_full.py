"""Issue 23, must-show 3: a full disk mid-audit. The runs finished before it stay intact, the
command ends with one clean line (no traceback), no claim or partial checkpoint is left
behind, and a rerun once there is space ends with the results.csv of an uninterrupted audit.

Needs root (a small tmpfs is mounted for the runs); skipped otherwise."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from audit_helpers import archaudit

from archaudit.rundir import DONE

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
    pytest.mark.slow,  # three small audits in subprocesses: minutes on two shared cores
]
SLACK = 256 * 1024  # free bytes left on the small disk: logs fit, a checkpoint does not


@pytest.fixture
def small_disk(tmp_path: Path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)])
    if done.returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(disk: Path, leave: int) -> Path:
    """A ballast file that leaves `leave` bytes free on `disk`."""
    stat = os.statvfs(disk)
    ballast = disk / "ballast"
    with open(ballast, "wb") as f:
        f.write(b"\0" * max(0, stat.f_bavail * stat.f_frsize - leave))
    return ballast


def leftovers(audit_dir: Path) -> list[str]:
    found = [*audit_dir.rglob("claim.*"), *audit_dir.rglob(".tmp-*"), *audit_dir.rglob("*.tmp")]
    return sorted(str(p.relative_to(audit_dir)) for p in found)


def test_a_full_disk_fails_cleanly_and_a_rerun_matches_an_uninterrupted_audit(
    write_audit, tmp_path: Path, small_disk: Path
):
    audit = write_audit(arms=[])
    healthy = tmp_path / "healthy"
    assert archaudit("run", str(audit), "-q", "--runs-dir", str(healthy), "--set",
                     'arms=["qk_norm"]').returncode == 0  # fmt: skip
    expected = (healthy / "tiny" / "results.csv").read_text()

    assert archaudit("run", str(audit), "-q", "--runs-dir", str(small_disk)).returncode == 0
    audit_dir = small_disk / "tiny"
    finished = {p: p.read_bytes() for p in audit_dir.rglob(DONE)}
    assert len(finished) == 2  # the baseline's two seeds
    ballast = fill(small_disk, SLACK)
    full = archaudit("run", str(audit), "-q", "--runs-dir", str(small_disk), "--set",
                     'arms=["qk_norm"]')  # fmt: skip
    assert full.returncode in (1, 2), full.stderr
    assert "Traceback" not in full.stderr, full.stderr
    errors = [line for line in full.stderr.splitlines() if line.startswith(("error", "failed"))]
    assert errors and "No space left on device" in errors[0], full.stderr
    assert {p: p.read_bytes() for p in audit_dir.rglob(DONE)} == finished, "finished runs intact"
    assert leftovers(audit_dir) == [], "no claim, partial checkpoint or temporary file left"

    ballast.unlink()
    rerun = archaudit("run", str(audit), "-q", "--runs-dir", str(small_disk), "--set",
                      'arms=["qk_norm"]')  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert (audit_dir / "results.csv").read_text() == expected
