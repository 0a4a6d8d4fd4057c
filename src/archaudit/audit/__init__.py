"""Audits end to end: an audit file → a plan of runs → resumable runs on any executor → a store
of run directories and the results table `archaudit.stats` reads.

    from archaudit.audit import load_audit, make_plan, run_audit
    outcome = run_audit(make_plan(load_audit("audit.toml")))

Its findings (every verdict and analysis, `archaudit.audit.findings.findings`) load scipy, so
they are imported from their module. See docs/audit.md. Importing this package does not import
torch.
"""

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
