"""Audits end to end: an audit file → a plan of runs → resumable runs on any executor → a store
of run directories and the results table `archaudit.stats` reads.

    from archaudit.audit import load_audit, make_plan, run_audit
    outcome = run_audit(make_plan(load_audit("audit.toml")))

Its findings (every verdict and analysis, `archaudit.audit.findings.findings`) load scipy, so
they are imported from their module. See docs/audit.md. Importing this package does not import
torch.

The names below load on first use (PEP 562): a run process imports `archaudit.audit.runner`,
which imports this package first, and must not pay for the demo's sequential loop and the
scipy.stats it loads (about 1.2 s on a 2-core CPU; benchmarks/startup.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from archaudit.audit.coordinator import AuditOutcome, run_audit
    from archaudit.audit.demo import run_demo, verdict_table
    from archaudit.audit.executors import EXECUTORS, make_executor
    from archaudit.audit.launch import RunOptions
    from archaudit.audit.plan import Plan, RunSpec, make_plan
    from archaudit.audit.record import RunRecord
    from archaudit.audit.rerun import RerunReport, rerun
    from archaudit.audit.runner import run_one
    from archaudit.audit.spec import AuditSpec, load_audit
    from archaudit.audit.starter import write_starter
    from archaudit.audit.store import refresh_export, run_status
    from archaudit.audit.trackers import TRACKERS
    from archaudit.audit.tune import tune_baseline

_LAZY: dict[str, str] = {
    "AuditOutcome": "archaudit.audit.coordinator",
    "run_audit": "archaudit.audit.coordinator",
    "run_demo": "archaudit.audit.demo",
    "verdict_table": "archaudit.audit.demo",
    "EXECUTORS": "archaudit.audit.executors",
    "make_executor": "archaudit.audit.executors",
    "RunOptions": "archaudit.audit.launch",
    "Plan": "archaudit.audit.plan",
    "RunSpec": "archaudit.audit.plan",
    "make_plan": "archaudit.audit.plan",
    "RunRecord": "archaudit.audit.record",
    "RerunReport": "archaudit.audit.rerun",
    "rerun": "archaudit.audit.rerun",
    "run_one": "archaudit.audit.runner",
    "AuditSpec": "archaudit.audit.spec",
    "load_audit": "archaudit.audit.spec",
    "write_starter": "archaudit.audit.starter",
    "refresh_export": "archaudit.audit.store",
    "run_status": "archaudit.audit.store",
    "TRACKERS": "archaudit.audit.trackers",
    "tune_baseline": "archaudit.audit.tune",
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
