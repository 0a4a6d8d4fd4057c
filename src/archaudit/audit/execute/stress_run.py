"""`run_stress`: train the stress sweep through the coordinator. Apart from the plan and the
reader (`audit.stability.stress`, `audit.stability.stress_result`) so that the findings, which the
coordinator's trackers log, can read a stored stress test without importing the coordinator back."""

from __future__ import annotations

from archaudit.audit.setup.spec import AuditSpec
from archaudit.audit.stability.stress import StressPlan, stress_plan
from archaudit.progress import warn


def run_stress(
    spec: AuditSpec, *, executor: str | None = None, workers: int | None = None, live: bool = True
) -> StressPlan:
    """Train (or resume) every stress run the plan has left to train, then each rate above the
    grid that the finished runs call for (`stress.extra_rates`: the baseline has not broken)."""
    from archaudit.audit.execute.coordinator import run_audit

    plan = stress_plan(spec)
    if power := plan.power_note():
        warn(power)
    for _ in range(spec.stress.extra_rates + 1):  # a round per rate above the grid, at most
        if not plan.plan.runs:
            break
        run_audit(plan.plan, executor=executor, workers=workers, tracker="", live=live)
        plan = stress_plan(spec)
    return plan
