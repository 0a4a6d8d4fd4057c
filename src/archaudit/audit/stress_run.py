"""`run_stress`: train the stress sweep through the coordinator. Apart from the plan and the
reader (`audit.stress`, `audit.stress_result`) so that the findings, which the coordinator's
trackers log, can read a stored stress test without importing the coordinator back."""

from __future__ import annotations

from archaudit.audit.spec import AuditSpec
from archaudit.audit.stress import StressPlan, stress_plan
from archaudit.progress import warn


def run_stress(
    spec: AuditSpec, *, executor: str | None = None, workers: int | None = None, live: bool = True
) -> StressPlan:
    """Train (or resume) every stress run the plan has left to train."""
    from archaudit.audit.coordinator import run_audit

    plan = stress_plan(spec)
    if power := plan.power_note():
        warn(power)
    if plan.plan.runs:
        run_audit(plan.plan, executor=executor, workers=workers, tracker="", live=live)
    return plan
