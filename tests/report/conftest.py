"""Fixtures for the report tests. A report draws every figure (seconds each on a busy machine),
so the reports the tests only read are built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import fake_audit, write_results

from archaudit.report import Report, build_report

EFFECTS = {"qk_norm": -0.002, "post_ln": 0.2, "geglu": 0.001, "softpick": -0.003}
"""True val_loss changes: post_ln is a clear regressor, the rest are noise."""


@pytest.fixture(scope="session")
def results_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_results(tmp_path_factory.mktemp("csv") / "results.csv", EFFECTS)


@pytest.fixture(scope="session")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_audit(tmp_path_factory.mktemp("audit"), EFFECTS, diverge=("geglu", "d48", 1, 12))


@pytest.fixture(scope="session")
def csv_report(results_csv: Path) -> Report:
    return build_report(results_csv)


@pytest.fixture(scope="session")
def audit_report(audit_dir: Path) -> Report:
    return build_report(audit_dir, command="archaudit report runs/fake")
