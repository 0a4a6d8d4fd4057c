"""Issue 16, must-show 2: `archaudit demo` (what `make demo` runs) twice, as two fresh clones
would run it: other working folders, other token caches (`ARCHAUDIT_CACHE`), other string-hash
seeds. The verdict tables and the exported results are identical."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from archaudit.audit.runner import cli_command
from archaudit.audit.store import ITEMS, RESULTS
from archaudit.evals import builtin_suites


def demo_in_a_fresh_place(folder: Path, hash_seed: str) -> tuple[str, Path]:
    """The printed tables (the closing line's minutes and path left out) and the audit dir."""
    folder.mkdir()
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "ARCHAUDIT_CACHE": str(folder / "cache")}
    done = subprocess.run(
        cli_command("demo", "--quiet"), cwd=folder, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    tables = [line for line in done.stdout.splitlines() if not line.startswith("demo audit:")]
    return "\n".join(tables), folder / "runs" / "demo"


@pytest.mark.slow
@pytest.mark.skipif("demo" not in builtin_suites(), reason="the evals `demo` suite is missing")
def test_the_demo_prints_the_same_tables_from_fresh_caches_and_hash_seeds(tmp_path: Path):
    first, first_dir = demo_in_a_fresh_place(tmp_path / "clone-a", "101")
    second, second_dir = demo_in_a_fresh_place(tmp_path / "clone-b", "202")
    assert "downstream_avg at scale d64" in first
    assert first == second
    for name in (RESULTS, ITEMS):
        assert (first_dir / name).read_bytes() == (second_dir / name).read_bytes(), name
