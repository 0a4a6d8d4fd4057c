"""`archaudit demo`: the built-in audit (demo.toml) on the embedded corpus, then its verdicts.

Eight arms (the baseline with three noise-floor seeds, seven modifications with one) at two tiny
scales, scored on the `demo` probe suite; 4–7 minutes on two CPU cores.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from archaudit.audit.coordinator import AuditOutcome, run_audit
from archaudit.audit.plan import make_plan
from archaudit.audit.spec import load_audit
from archaudit.audit.store import AUDIT_FILE, read_json

if TYPE_CHECKING:  # scipy loads only when the demo judges
    from archaudit.stats import Judgement

DEMO_FILE = Path(__file__).with_name("demo.toml")
VERDICT_METRICS = (("val_loss", True), ("downstream_avg", False))
"""(metric, lower is better): the demo's primary loss and its downstream macro average."""


@dataclass(frozen=True)
class DemoOutcome:
    audit: AuditOutcome
    judgements: list[Judgement]
    """One per (baseline, scale, metric)."""
    seconds: float


def run_demo(
    runs_dir: str | Path = "runs",
    *,
    workers: int | None = None,
    overrides: Sequence[str] = (),
    live: bool = True,
) -> DemoOutcome:
    start = time.perf_counter()
    plan = make_plan(load_audit(DEMO_FILE, overrides, runs_dir=runs_dir))
    outcome = run_audit(plan, workers=workers, live=live)
    return DemoOutcome(outcome, judge_audit(outcome.audit_dir), time.perf_counter() - start)


def judge_audit(
    audit_dir: Path, metrics: Sequence[tuple[str, bool]] = VERDICT_METRICS
) -> list[Judgement]:
    """Every arm against its baseline, per baseline, scale and metric (with several baselines,
    arms are named `<arm>@<baseline>` and the others' arms are left out of each family)."""
    from archaudit.stats import judge, load_table

    table = load_table(audit_dir)
    baselines = (read_json(audit_dir / AUDIT_FILE) or {}).get("baselines", ["baseline"])
    names = {b: f"baseline@{b}" if len(baselines) > 1 else "baseline" for b in baselines}
    judgements = []
    for base, name in names.items():
        own = f"@{base}"
        others = [a for a in table.arms if len(baselines) > 1 and not a.endswith(own)]
        for scale in table.scales:
            for metric, lower in metrics:
                if metric in table.metrics:
                    judgements.append(
                        judge(
                            table,
                            metric,
                            baseline=name,
                            lower_is_better=lower,
                            scale=scale,
                            exclude=others,
                        )
                    )
    return judgements


def verdict_table(judgement: Judgement) -> Table:
    """One judgement as a table: Δ (positive = better), z, p, corrected p and the verdict."""
    table = Table(
        title=f"{judgement.metric} at scale {judgement.scale}: σ = {judgement.sigma:.4g} "
        f"(baseline n = {judgement.baseline_n}), m = {judgement.m}, {judgement.correction}, "
        f"α = {judgement.alpha}, uncorrected FWER {judgement.fwer_uncorrected:.0%}"
    )
    for column in ("arm", "seeds", "mean", "Δ", "z", "p", "p_adj", "test", "verdict"):
        table.add_column(column, justify="left" if column in ("arm", "verdict") else "right")
    for arm in judgement.arms:
        table.add_row(
            arm.arm,
            str(arm.n_seeds),
            f"{arm.mean:.4f}",
            f"{arm.delta:+.4f}",
            f"{arm.z:+.2f}",
            f"{arm.p:.3g}",
            f"{arm.p_adj:.3g}",
            arm.test or "-",
            arm.verdict,
        )
    return table
