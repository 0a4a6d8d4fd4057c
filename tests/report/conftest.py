"""Fixtures for the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import fake_audit, write_results

EFFECTS = {"qk_norm": -0.002, "post_ln": 0.1, "geglu": 0.001, "softpick": -0.003}
"""True val_loss changes: post_ln is a clear regressor, the rest are noise."""


@pytest.fixture
def results_csv(tmp_path: Path) -> Path:
    return write_results(tmp_path / "results.csv", EFFECTS)


@pytest.fixture
def audit_dir(tmp_path: Path) -> Path:
    return fake_audit(tmp_path, EFFECTS, diverge=("geglu", "d48", 1, 12))
