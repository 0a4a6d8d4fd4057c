"""`replicate(claim) -> Replication` and `plan_claims(...)`: a claim trained, judged and costed.

A file's claims share its runs: `replicate_all` trains each audit file once (its grid and/or its
stress sweep), then judges every claim from the folders. Everything is resumable: the runs are
ordinary run folders, so a killed `replicate` picks up where it stopped. `plan_claims` states
what is left to train and its CPU cost from `plan`'s and `stress --plan`'s estimates (the probe,
measured on this machine unless cached), and each design's power before anything trains.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from archaudit.audit.replicating.replicate import (
    TRAINERS,
    Claim,
    ClaimTest,
    claim_spec,
    get_claim,
    list_claims,
)
from archaudit.audit.replicating.replication import Replication, judge_claim
from archaudit.audit.setup.spec import AuditSpec

STRESS_TESTS = tuple(t for t in ClaimTest if t.stressed)


@dataclass(frozen=True, kw_only=True)
class ClaimPlan:
    """What one claim still has to train, what that costs, and what its design can detect."""

    claim: str
    status: str
    """The claim's `status` ("" = runnable: it needs nothing the tool lacks)."""
    runs_left: int
    runs_total: int
    cpu_s: float | None
    """The probe's CPU-seconds of the runs left (None: not probed, or a shared audit)."""
    cpu_more_s: float = 0.0
    """At most, for the stress test's rates above the grid (when the baseline holds)."""
    shares: str = ""
    """The claim whose runs this one reads (same audit file, same kind of training)."""
    power: tuple[str, ...] = ()

    def line(self) -> str:
        if self.status:
            return f"{self.claim}: not runnable ({self.status})"
        if self.shares:
            return f"{self.claim}: judged on the runs of {self.shares}"
        cost = (
            f"{self.cpu_s / 60:.1f} CPU-min"
            + (f" (+ up to {self.cpu_more_s / 60:.1f} above the grid)" if self.cpu_more_s else "")
            if self.cpu_s is not None
            else "CPU time not estimated (--no-probe)"
        )
        return f"{self.claim}: {self.runs_left} of {self.runs_total} runs to train, {cost}"


def _resolve(claims: Iterable[str | Claim]) -> list[Claim]:
    return [c if isinstance(c, Claim) else get_claim(c) for c in claims]


def _training_key(claim: Claim) -> tuple[str, bool | str]:
    """Claims with one key share one training: the same file, the grid or the stress sweep (a
    level claim's measuring is its own)."""
    if claim.is_level:
        return claim.file, claim.name
    return claim.file, claim.test in STRESS_TESTS


def replicate(
    claim: str | Claim,
    runs_dir: str | Path = "runs",
    *,
    overrides: Sequence[str] = (),
    executor: str | None = None,
    workers: int | None = None,
    live: bool = True,
) -> Replication:
    """Train what `claim`'s audit lacks (resumable), then judge it from the folders."""
    return replicate_all([claim], runs_dir, overrides=overrides, executor=executor,
                         workers=workers, live=live)[0]  # fmt: skip


def replicate_all(
    claims: Iterable[str | Claim] | None = None,
    runs_dir: str | Path = "runs",
    *,
    overrides: Sequence[str] = (),
    executor: str | None = None,
    workers: int | None = None,
    live: bool = True,
) -> list[Replication]:
    """Every claim given (default: every built-in claim): each training once, then each judged.
    A claim that needs what the tool lacks is judged `needs` without training."""
    chosen = _resolve(list_claims() if claims is None else claims)
    trained: set[tuple[str, bool | str]] = set()
    for claim in chosen:
        if not claim.runnable or _training_key(claim) in trained:
            continue
        spec = claim_spec(claim, runs_dir, overrides)
        TRAINERS[claim.test](claim, spec, executor, workers, live)
        trained.add(_training_key(claim))
    return judge_all(chosen, runs_dir, overrides=overrides)


def judge_all(
    claims: Iterable[str | Claim] | None = None,
    runs_dir: str | Path = "runs",
    *,
    overrides: Sequence[str] = (),
) -> list[Replication]:
    """Every claim judged from the folders under `runs_dir` (nothing trains): the table of
    docs/replications.md. A claim with no results is `not run`."""
    chosen = _resolve(list_claims() if claims is None else claims)
    return [judge_claim(c, claim_spec(c, runs_dir, overrides)) for c in chosen]


def plan_claims(
    claims: Iterable[str | Claim] | None = None,
    runs_dir: str | Path = "runs",
    *,
    overrides: Sequence[str] = (),
    probe: bool = True,
) -> list[ClaimPlan]:
    """What each claim has left to train, its CPU cost (the probe's, unless `probe` is False)
    and its design's power; a file's second claim of one kind shares the first's runs."""
    out: list[ClaimPlan] = []
    first: dict[tuple[str, bool | str], str] = {}
    for claim in _resolve(list_claims() if claims is None else claims):
        if not claim.runnable:
            out.append(ClaimPlan(claim=claim.name, status=claim.status, runs_left=0,
                                 runs_total=0, cpu_s=0.0))  # fmt: skip
            continue
        spec = claim_spec(claim, runs_dir, overrides)
        key = _training_key(claim)
        planned = _planner(claim)(claim, spec, probe)
        if key in first:
            planned = ClaimPlan(
                claim=claim.name, status="", runs_left=0, runs_total=planned.runs_total,
                cpu_s=0.0, shares=first[key], power=planned.power,
            )  # fmt: skip
        first.setdefault(key, claim.name)
        out.append(planned)
    return out


def total_cpu_s(plans: Sequence[ClaimPlan]) -> tuple[float | None, float]:
    """The CPU-seconds of every claim's runs left (None when one was not estimated), and at
    most how many more the stress tests' rates above the grid may add."""
    costs = [p.cpu_s for p in plans]
    known = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    return known, sum(p.cpu_more_s for p in plans)


def _planner(claim: Claim):
    if claim.test in STRESS_TESTS:
        return _plan_stress
    return _plan_level if claim.is_level else _plan_grid


def _plan_level(claim: Claim, spec: AuditSpec, probe: bool) -> ClaimPlan:
    """A level claim: its grid when the measure trains on the audit's runs, else nothing to
    train (the measuring itself, a few diagnostics' forward passes, is not estimated)."""
    from archaudit.audit.replicating.replicate_levels import stored_sample, trains

    measured = stored_sample(claim, spec.audit_dir) is not None
    unit = "seeds" if trains(claim) else "text windows"
    note = f"{claim.measure} measured" if measured else f"{claim.measure} to measure ({unit})"
    if not trains(claim):
        return ClaimPlan(claim=claim.name, status="", runs_left=0, runs_total=0, cpu_s=0.0,
                         power=(f"{note}; nothing to train (a model file)",))  # fmt: skip
    grid = _plan_grid(claim, spec, probe)
    return dataclasses.replace(grid, power=(note, *grid.power))


def _plan_grid(claim: Claim, spec: AuditSpec, probe: bool) -> ClaimPlan:
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.grid.store import read_finished
    from archaudit.audit.planning.estimate import plan_summary
    from archaudit.audit.planning.power_plan import plan_power

    plan = make_plan(spec)
    left = [r for r in plan.runs if read_finished(plan.run_dir(r), r) is None]
    cpu: float | None = 0.0
    if left and probe:
        summary = plan_summary(plan, probe=True, loop=False)
        done = {r.path for r in plan.runs} - {r.path for r in left}
        costs = [r.cost.cpu_seconds for r in summary.runs if r.run.path not in done]
        cpu = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    elif left:
        cpu = None
    lines = [line for family in plan_power(plan) for line in family.lines()]
    if claim.effect_sigmas and ClaimTest(claim.test).planned_by_power:
        lines.append(_power_at(claim, plan))
    return ClaimPlan(
        claim=claim.name, status="", runs_left=len(left), runs_total=len(plan.runs), cpu_s=cpu,
        power=tuple(lines),
    )  # fmt: skip


def _power_at(claim: Claim, plan) -> str:
    from archaudit.names import BASELINE
    from archaudit.stats.choices.options import DEFAULT
    from archaudit.stats.simulation.power import Design, power

    runs = plan.runs
    base = sum(r.arm == BASELINE for r in runs) // max(len(plan.spec.scales), 1)
    arm = sum(r.arm == claim.arm for r in runs) // max(len(plan.spec.scales), 1)
    arms = len({r.arm for r in runs} - {BASELINE})
    alpha = DEFAULT.alpha / len(plan.spec.primary_metrics)
    design = Design(arm_seeds=max(arm, 1), baseline_seeds=max(base, 2), n_arms=max(arms, 1),
                    alpha=alpha)  # fmt: skip
    have = power(claim.effect_sigmas, design)
    return (
        f"power {have:.2f} for the planned effect {claim.effect_sigmas:g} σ of {claim.arm} "
        f"({arm} seeds, baseline {base}, {arms} arm{'s' * (arms != 1)}, α {alpha:g}; fixed design)"
    )


def _plan_stress(claim: Claim, spec: AuditSpec, probe: bool) -> ClaimPlan:
    from archaudit.audit.planning.stress_time import stress_time
    from archaudit.audit.stability.stress import stress_plan

    plan = stress_plan(spec)
    timed = stress_time(plan) if probe else None
    left = len(plan.plan.runs)
    cpu: float | None = 0.0 if not left else (timed.cpu_s if timed else None)
    more = timed.above_grid_cpu_s if timed else 0.0
    # the logit test ranks within the rate test's high strata and the depth-sensitivity test
    # over the depth test's and more: where those two can declare, every stress test can
    note = plan.power_note() or "the sweep's tests can declare at this design (exact floor ≤ α/m)"
    return ClaimPlan(
        claim=claim.name, status="", runs_left=left, runs_total=len(plan.points), cpu_s=cpu,
        cpu_more_s=more if not math.isnan(more) else 0.0, power=(note,),
    )  # fmt: skip
