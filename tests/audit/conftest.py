"""Fixtures for the audit tests. Importing `archaudit.cli.audit_cmd` registers the audit
commands on `archaudit.cli.base.app` (until `cli/__init__.py` does it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from audit_helpers import TINY, merged, to_toml
from doors_helpers import tiny  # noqa: F401  (the output doors' fixture: a run and its export)

from archaudit.cli import audit_cmd  # noqa: F401


@pytest.fixture(autouse=True)
def _keep_torch_threads():
    """Runs in this process set torch's thread count (recipe.threads); give it back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def write_audit(tmp_path: Path):
    """write_audit(**changes) → the path of a tiny audit file with those changes (a section in
    `drop` is left out)."""

    def write(name: str = "audit.toml", drop: tuple[str, ...] = (), **changes: Any) -> Path:
        tree = {k: v for k, v in merged(TINY, changes).items() if k not in drop}
        path = tmp_path / name
        path.write_text(to_toml(tree))
        return path

    return write


@pytest.fixture
def probe_suite(tmp_path: Path) -> Path:
    """A one-task downstream suite (an in-context probe on the embedded language)."""
    path = tmp_path / "probes.toml"
    path.write_text(
        'name = "probes"\n[[tasks]]\nname = "induction"\nformat = "probe"\nlimit = 8\n'
        'params = { generator = "induction", seed = 0 }\n'
    )
    return path
