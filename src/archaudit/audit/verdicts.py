"""An audit's verdicts: every arm against its baseline, per baseline, scale and metric, and the
same as plain rows for trackers."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.audit.spec import default_primaries
from archaudit.audit.store import AUDIT_FILE, read_json, read_results
from archaudit.metrics import DOWNSTREAM_AVERAGE, PRIMARY_LOSS
from archaudit.names import BASELINE

if TYPE_CHECKING:  # scipy loads only when an audit is judged
    from archaudit.audit.loop_summary import LoopSummary
    from archaudit.stats import Judgement, JudgeOptions, Table

VERDICT_METRICS = (PRIMARY_LOSS, DOWNSTREAM_AVERAGE)
"""The primary loss (lower is better, read from its name) and the downstream average."""


def audit_primaries(audit_dir: Path) -> tuple[str, ...]:
    """The audit's primary metrics as its audit.json records them (an older audit.json: the
    default for an audit with or without an eval suite)."""
    record = read_json(audit_dir / AUDIT_FILE) or {}
    primary = record.get("primary")
    if isinstance(primary, list) and primary and all(isinstance(m, str) for m in primary):
        return tuple(primary)
    return default_primaries(bool(record.get("suite")))


def family_options(
    audit_dir: Path, table: Table, metric: str, options: JudgeOptions
) -> tuple[JudgeOptions, str]:
    """The options one family of an audit is judged with, and the note that says so: α is split
    evenly (Bonferroni) over the primary metrics the table holds, so that the audit as a whole,
    not each metric, errs at most α (as the sequential loop splits it); any other metric is
    exploratory, judged at α outside that budget. `run`, `stats` and the report all ask here."""
    primaries = [m for m in audit_primaries(audit_dir) if m in table.metrics]
    names = ", ".join(primaries) or "none present"
    if metric not in primaries:
        return options, (
            f"exploratory: {metric} is not a primary metric of this audit ({names}); it is "
            f"judged at α = {options.alpha}, outside the audit's error budget"
        )
    if len(primaries) == 1:
        return options, ""
    split = options.alpha / len(primaries)
    return options.but(alpha=split), (
        f"α = {options.alpha} is split over the audit's {len(primaries)} primary metrics "
        f"({names}): {metric} is judged at α = {split:g}, so the audit as a whole errs at most "
        f"α = {options.alpha} (Bonferroni)"
    )


def judge_family(
    audit_dir: Path | None,
    table: Table,
    metric: str,
    options: JudgeOptions,
    loop: LoopSummary | None,
) -> Judgement:
    """One family as `run`, `stats` and the report judge it: the loop's judgement where the loop
    judged it (`judge_with_loop`), and on an audit (`audit_dir`) with α split over its primary
    metrics and a note that says so (`family_options`); a CSV's at the options' α."""
    from archaudit.audit.loop_summary import judge_with_loop

    if audit_dir is None:
        return judge_with_loop(table, metric, options, loop)
    options, note = family_options(audit_dir, table, metric, options)
    judged = judge_with_loop(table, metric, options, loop)
    return dataclasses.replace(judged, notes=(*judged.notes, note)) if note else judged


def judge_audit(audit_dir: Path, metrics: Sequence[str] = VERDICT_METRICS) -> list[Judgement]:
    """Every arm against its baseline, per baseline, scale and metric (with several baselines,
    arms are named `<arm>@<baseline>` and the others' arms are left out of each family), by the
    default tests: one recipe does not make the arms' seed variances equal (a destabilised arm
    spreads wider), so each arm's own variance enters its test. A family the sequential loop
    judged is the loop's judgement, α split over the audit's primary metrics (`judge_family`):
    what `stats` and the report show. The results are the runs' DONE records (`read_results`),
    not results.csv."""
    from archaudit.audit.loop_summary import read_loop_summary
    from archaudit.stats import JudgeOptions

    table = read_results(audit_dir)
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
                    judgements.append(judge_family(audit_dir, table, metric, options, loop))
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
