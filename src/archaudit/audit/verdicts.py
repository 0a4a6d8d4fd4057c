"""An audit's verdicts: every arm against its baseline, per baseline, scale and metric, and the
same as plain rows for trackers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.audit.store import AUDIT_FILE, read_json, read_results
from archaudit.names import BASELINE

if TYPE_CHECKING:  # scipy loads only when an audit is judged
    from archaudit.stats import Judgement

VERDICT_METRICS = ("val_loss", "downstream_avg")
"""The primary loss (lower is better, read from its name) and the downstream average."""


def judge_audit(audit_dir: Path, metrics: Sequence[str] = VERDICT_METRICS) -> list[Judgement]:
    """Every arm against its baseline, per baseline, scale and metric (with several baselines,
    arms are named `<arm>@<baseline>` and the others' arms are left out of each family), by the
    default tests: one recipe does not make the arms' seed variances equal (a destabilised arm
    spreads wider), so each arm's own variance enters its test. A family the sequential loop
    judged is the loop's judgement (`judge_with_loop`): what `stats` and the report show. The
    results are the runs' DONE records (`read_results`), not results.csv. The `metrics` the
    table has are the primary family: α is split over them (`primary_family`)."""
    from archaudit.audit.loop_summary import judge_with_loop, read_loop_summary
    from archaudit.stats import JudgeOptions

    table = read_results(audit_dir)
    primaries = tuple(m for m in metrics if m in table.metrics)
    loop = read_loop_summary(audit_dir)
    baselines = (read_json(audit_dir / AUDIT_FILE) or {}).get("baselines", [BASELINE])
    names = {b: f"{BASELINE}@{b}" if len(baselines) > 1 else BASELINE for b in baselines}
    judgements = []
    for base, name in names.items():
        own = f"@{base}"
        others = [a for a in table.arms if len(baselines) > 1 and not a.endswith(own)]
        for scale in table.scales:
            for metric in metrics:
                if metric in table.metrics:
                    options = JudgeOptions(baseline=name, scale=scale, exclude=tuple(others))
                    judgements.append(judge_with_loop(table, metric, options, loop, primaries))
    return judgements


def verdict_rows(judgements: Sequence[Judgement]) -> list[dict[str, Any]]:
    """One row per (metric, arm, scale): the verdict, Δ (positive = better), adjusted p."""
    return [
        {
            "metric": j.metric,
            "arm": arm.arm,
            "scale": arm.scale,
            "verdict": arm.verdict,
            "delta": arm.delta,
            "p_adj": arm.p_adj,
            "n_seeds": arm.n_seeds,
        }
        for j in judgements
        for arm in j.arms
    ]


def audit_primaries(source: Path, table_metrics: Sequence[str]) -> tuple[str, ...]:
    """The primary family of `source` when it is an audit (the verdict metrics its table has,
    over which `judge_audit` splits α), else () (a results table: one metric, α alone)."""
    if not (source / AUDIT_FILE).is_file():
        return ()
    return tuple(m for m in VERDICT_METRICS if m in table_metrics)
