"""`archaudit demo`: the built-in audit (demo.toml) on the embedded corpus, then its verdicts.

Five arms (the baseline with three seeds, four modifications with one at first) at two tiny
scales, scored on the `demo` probe suite; 25 runs in 3 rounds, about 3 minutes on two idle CPU
cores and 7.4 at a load of 2.7 (docs/benchmarks/demo-history.md), longer on a busier one. Seeds
are added round by round where a verdict could still change, up to three per arm (`[seeds] policy =
"sequential"`, `archaudit.audit.execute.sequential`), judged by the robust rule (Welch from two
seeds, a confirmation seed before any verdict); each table states that sequential design's measured
family-wise error rate under normal noise and the noise panel's worst, and its MDE. An audit
file with `policy = "fixed"` is judged by the default fixed-design tests instead (Welch, or the
6σ bound for single-seed arms), under the fixed design's measured error rates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from archaudit.audit.launcher.warm import kept_server
from archaudit.audit.setup.spec import load_audit

if TYPE_CHECKING:  # the loop, the plan and scipy load once the warm server has started
    from archaudit.audit.execute.coordinator import AuditOutcome
    from archaudit.audit.execute.sequential import SettledAudit
    from archaudit.audit.results.findings import Findings
    from archaudit.stats import Judgement

DEMO_FILE = Path(__file__).with_name("demo.toml")


@dataclass(frozen=True)
class DemoOutcome:
    audit: AuditOutcome
    judgements: list[Judgement]
    """One per (baseline, scale, metric) (a fixed design)."""
    seconds: float
    """From the start to the last run's end."""
    findings: Findings
    """The audit's findings, computed once: the verdict tables and the report read them."""
    settled: SettledAudit | None = None
    """The sequential loop's verdicts (a sequential design)."""


def run_demo(
    runs_dir: str | Path = "runs",
    *,
    workers: int | None = None,
    overrides: Sequence[str] = (),
    live: bool = True,
) -> DemoOutcome:
    start = time.perf_counter()
    spec = load_audit(DEMO_FILE, overrides, runs_dir=runs_dir)
    with kept_server(start=spec.executor.kind == "local"):  # its preload beside what follows
        from archaudit.audit.execute.coordinator import run_audit
        from archaudit.audit.execute.sequential import run_until_settled
        from archaudit.audit.grid.plan import make_plan
        from archaudit.audit.results.findings import report_findings

        plan = make_plan(spec)
        settled = None
        if plan.spec.seeds.policy == "sequential":
            settled = run_until_settled(plan, workers=workers, live=live)
            outcome = settled.audit
        else:
            outcome = run_audit(plan, workers=workers, live=live)
    seconds = time.perf_counter() - start
    found = report_findings(outcome.audit_dir)  # the server is gone: its core is free
    judged = [] if settled else list(found.judgements)
    return DemoOutcome(outcome, judged, seconds, found, settled)


def verdict_table(judgement: Judgement) -> Table:
    """One judgement as a table under its header (direction, σ, test, the design's measured
    error rate and MDE): Δ (positive = better), t, p, corrected p and the verdict."""
    from archaudit.stats.judging.judgement_text import header
    from archaudit.stats.tests import statistical_test

    table = Table(title="\n".join(header(judgement)), title_justify="left")
    statistic = statistical_test(judgement.test).symbol
    for column in ("arm", "seeds", "mean", "Δ", statistic, "p", "p_adj", "verdict"):
        table.add_column(column, justify="left" if column in ("arm", "verdict") else "right")
    for arm in judgement.arms:
        table.add_row(
            arm.arm,
            str(arm.n_seeds),
            f"{arm.mean:.4f}",
            f"{arm.delta:+.4f}",
            f"{arm.statistic:+.2f}",
            f"{arm.p:.3g}",
            f"{arm.p_adj:.3g}",
            arm.verdict,
        )
    return table
