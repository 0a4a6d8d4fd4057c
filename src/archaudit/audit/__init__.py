"""Audits end to end: an audit file → a plan of runs → resumable runs on any executor → a store
of run directories and the results table `archaudit.stats` reads.

    from archaudit.audit import load_audit, make_plan, run_audit
    outcome = run_audit(make_plan(load_audit("audit.toml")))

Its findings (every verdict and analysis, `archaudit.audit.results.findings.findings`) load scipy,
so they are imported from their module. See docs/audit.md. Importing this package does not import
torch.

The names below load on first use (PEP 562): a run process imports `archaudit.audit.execute.runner`,
which imports this package first, and must not pay for the demo's sequential loop and the
scipy.stats it loads (about 1.2 s on a 2-core CPU; benchmarks/startup.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from archaudit.audit.execute.coordinator import AuditOutcome, run_audit
    from archaudit.audit.execute.demo import run_demo, verdict_table
    from archaudit.audit.execute.rerun import RerunReport, rerun
    from archaudit.audit.execute.runner import run_one
    from archaudit.audit.execute.trackers import TRACKERS
    from archaudit.audit.execute.tune import tune_baseline
    from archaudit.audit.grid.plan import Plan, RunSpec, make_plan
    from archaudit.audit.grid.record import RunRecord
    from archaudit.audit.grid.store import refresh_export, run_status
    from archaudit.audit.launcher.executors import EXECUTORS, make_executor
    from archaudit.audit.launcher.launch import RunOptions
    from archaudit.audit.setup.spec import AuditSpec, load_audit
    from archaudit.audit.setup.starter import write_starter

_LAZY: dict[str, str] = {
    "AuditOutcome": "archaudit.audit.execute.coordinator",
    "run_audit": "archaudit.audit.execute.coordinator",
    "run_demo": "archaudit.audit.execute.demo",
    "verdict_table": "archaudit.audit.execute.demo",
    "EXECUTORS": "archaudit.audit.launcher.executors",
    "make_executor": "archaudit.audit.launcher.executors",
    "RunOptions": "archaudit.audit.launcher.launch",
    "Plan": "archaudit.audit.grid.plan",
    "RunSpec": "archaudit.audit.grid.plan",
    "make_plan": "archaudit.audit.grid.plan",
    "RunRecord": "archaudit.audit.grid.record",
    "RerunReport": "archaudit.audit.execute.rerun",
    "rerun": "archaudit.audit.execute.rerun",
    "run_one": "archaudit.audit.execute.runner",
    "AuditSpec": "archaudit.audit.setup.spec",
    "load_audit": "archaudit.audit.setup.spec",
    "write_starter": "archaudit.audit.setup.starter",
    "refresh_export": "archaudit.audit.grid.store",
    "run_status": "archaudit.audit.grid.store",
    "TRACKERS": "archaudit.audit.execute.trackers",
    "tune_baseline": "archaudit.audit.execute.tune",
}
"""Public name → the module that defines it, imported when the name is first asked for."""

__all__ = [
    "EXECUTORS",
    "TRACKERS",
    "AuditOutcome",
    "AuditSpec",
    "Plan",
    "RerunReport",
    "RunOptions",
    "RunRecord",
    "RunSpec",
    "load_audit",
    "make_executor",
    "make_plan",
    "refresh_export",
    "rerun",
    "run_audit",
    "run_demo",
    "run_one",
    "run_status",
    "tune_baseline",
    "verdict_table",
    "write_starter",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'archaudit.audit' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
