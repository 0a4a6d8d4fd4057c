"""Issue 36, must-show 3: `export hf` and `import lm-eval` killed (SIGKILL) at chosen moments,
or writing onto a full disk (a real tmpfs too small for the output), leave nothing `eval` or
`stats` would accept, and their rerun's output is byte-identical to an uninterrupted one.

Each command runs in a fresh process; the kill is a patch that sends SIGKILL to the process
itself at the moment named, so every moment is hit exactly (a timer would be flaky)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from doors_helpers import python, tree_bytes

pytestmark = pytest.mark.slow
SRC = str(Path(__file__).resolve().parents[2] / "src")

KILL = """
import os, signal, sys
import {module} as target
original = target.{name}
def killed(*args, **kwargs):
    {before}
    os.kill(os.getpid(), signal.SIGKILL)
target.{name} = killed
from archaudit.cli import main
sys.argv = ["archaudit", *sys.argv[1:]]
main()
"""
EXPORT_MOMENTS = {
    # while the weights file is half written
    "weights": ("safetensors.torch", "save_file",
                "open(args[1], 'wb').write(b'\\\\x00' * 1000)"),
    "logit-check": ("archaudit.export.hf", "_logit_diff", "pass"),  # all files, never checked
    "rename": ("os", "rename", "pass"),  # checked, about to be renamed into place
}  # fmt: skip
IMPORT_MOMENTS = {
    "table-check": ("archaudit.evals.lmeval_results", "load_table", "pass"),
    "parquet": ("archaudit.evals.lmeval_results", "parquet_twin", "pass"),
    "rename": ("os", "rename", "pass"),
}


def archaudit(*argv: str, kill: tuple[str, str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC}
    if kill is None:
        command = [python(), "-m", "archaudit", *argv]
    else:
        module, name, before = kill
        code = KILL.format(module=module, name=name, before=before)
        command = [python(), "-c", code, *argv]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def _export(tiny: dict[str, Path], out: Path, **kw) -> subprocess.CompletedProcess:
    return archaudit("export", "hf", str(tiny["run"]), "--out", str(out), **kw)


def _import(tiny: dict[str, Path], out: Path, **kw) -> subprocess.CompletedProcess:
    return archaudit("import", "lm-eval", str(tiny["lmeval"]), "--arm-from", "parent",
                     "--out", str(out), **kw)  # fmt: skip


def _refused_by_readers(tiny: dict[str, Path], out: Path) -> None:
    """Nothing at `out`: `eval` and `stats` refuse it in one line."""
    assert not out.exists()
    ran = archaudit("eval", str(out), "--suite", str(tiny["suite"]), "--limit", "1")
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr


@pytest.mark.parametrize("moment", sorted(EXPORT_MOMENTS))
def test_export_killed_leaves_nothing_and_reruns_identically(moment, tiny, tmp_path):
    out = tmp_path / "hf"
    assert _export(tiny, out).returncode == 0
    reference = tree_bytes(out)
    shutil.rmtree(out)
    killed = _export(tiny, out, kill=EXPORT_MOMENTS[moment])
    assert killed.returncode == -9, killed.stderr[-2000:]
    _refused_by_readers(tiny, out)
    again = _export(tiny, out)
    assert again.returncode == 0, again.stderr
    assert tree_bytes(out) == reference
    assert [p.name for p in tmp_path.iterdir()] == ["hf"]  # the killed run's temporary is gone


@pytest.mark.parametrize("moment", sorted(IMPORT_MOMENTS))
def test_import_killed_leaves_nothing_and_reruns_identically(moment, tiny, tmp_path):
    out = tmp_path / "imported"
    assert _import(tiny, out).returncode == 0
    reference = tree_bytes(out)
    shutil.rmtree(out)
    killed = _import(tiny, out, kill=IMPORT_MOMENTS[moment])
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert not out.exists()
    stats = archaudit("stats", str(out), "--metric", "arc_easy_local/acc")
    assert stats.returncode == 2 and "Traceback" not in stats.stderr, stats.stderr
    again = _import(tiny, out)
    assert again.returncode == 0, again.stderr
    assert tree_bytes(out) == reference
    assert [p.name for p in tmp_path.iterdir()] == ["imported"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real tmpfs (root only), resized by `remount`."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def _resize(disk: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)


@pytest.mark.parametrize(("command", "size"), [("export", "96k"), ("import", "12k")])
def test_a_full_disk_is_one_line_and_leaves_nothing(command, size, tiny, small_disk):
    run = _export if command == "export" else _import
    out = small_disk / "out"
    assert run(tiny, out).returncode == 0
    reference = tree_bytes(out)
    shutil.rmtree(out)
    _resize(small_disk, size)
    full = run(tiny, out)
    lines = full.stderr.strip().splitlines()
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr[-3000:]
    assert "No space left" in lines[-1], full.stderr
    assert list(small_disk.iterdir()) == []  # nothing half-written, no temporary left
    _resize(small_disk, "8m")
    assert run(tiny, out).returncode == 0
    assert tree_bytes(out) == reference
