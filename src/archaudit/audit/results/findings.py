"""`findings(source, metrics, options) -> Findings`: every analysis of a source, run once.

One loader (`audit.results.source.load_source`: an audit folder, an audit file, a CSV or a
DataFrame), one loop over baselines × metrics × scales that judges each family (`judge_with_loop`:
the sequential loop's verdicts where the loop judged, α split over an audit's primary metrics), and
the analyses built on those judgements: transfer across scales and baselines, interactions,
aggregates over tasks, loss–downstream decoupling, power, signal-to-noise, the target-scale
prediction and the stress test. What could not be made is recorded with the reason.

`archaudit stats` prints slices of the record, the report lays out its sections from it, the
trackers log `Findings.rows()`, and `to_frame()` flattens it: no caller loads or judges alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.audit.results.findings_analyses import ANALYSES, with_stability
from archaudit.audit.results.findings_families import PlannedFamily, chosen_defaults, families
from archaudit.audit.results.findings_record import (
    ASKED,
    EVERYTHING,
    JUDGED,
    VERDICTS_ONLY,
    Absence,
    Analysis,
    Asked,
    Findings,
    NotComputed,
    Settings,
    VerdictRow,
    attempt,
)
from archaudit.audit.results.loop_summary import (
    LoopSummary,
    judge_with_loop,
    loop_notes,
    read_loop_summary,
)
from archaudit.audit.results.source import Source, load_source
from archaudit.audit.results.verdicts import with_note
from archaudit.names import BASELINE
from archaudit.stats.choices.options import DEFAULT, JudgeOptions

if TYPE_CHECKING:
    from archaudit.stats.judging.judgement import Judgement
    from archaudit.stats.records.table import Table

__all__ = [
    "EVERYTHING", "VERDICTS_ONLY", "Absence", "Analysis", "Asked", "Findings", "NotComputed",
    "Settings", "VerdictRow", "findings", "report_findings",
]  # fmt: skip
"""The record's names, importable from here beside the function that builds it."""


def findings(
    source: str | Path | Any,
    metrics: Sequence[str] = (),
    options: JudgeOptions = DEFAULT,
    *,
    asked: Asked = ASKED,
) -> Findings:
    """Load SOURCE once and run the `asked` analyses on `metrics` (default: an audit's primary
    metrics, else the registry's primary loss and downstream average the table holds, else
    every metric) under `options`, over every baseline and scale (`Asked.each_scale`)."""
    loaded = load_source(source, partial=asked.partial)
    absent: list[Absence] = []
    if loaded.table is None:
        record = _empty(loaded, Absence(Analysis.VERDICTS, "table", loaded.empty))
        if Analysis.STRESS in asked.analyses:  # a stress sweep may be all there is yet
            record = with_stability(record, loaded.audit_dir, absent)
        return dataclasses.replace(record, absent=(*record.absent, *absent))
    table = loaded.table
    plan = families(loaded, table, metrics, options, asked.each_scale)
    loop = read_loop_summary(loaded.audit_dir) if loaded.audit_dir and asked.loop else None
    judged = _judgements(table, plan.families, loop, absent) if asked.analyses & JUDGED else ()
    looped = loop_notes(loaded.audit_dir, loop, plan.metrics) if asked.loop else ()
    record = Findings(
        source=loaded.name,
        kind=loaded.kind,
        metrics=plan.metrics,
        scales=plan.scales,
        defaults=chosen_defaults(plan, options),
        judgements=judged,
        notes=(*loaded.notes, *looped),
        audit_dir=loaded.audit_dir,
        results_path=loaded.results_path,
        table=table,
    )
    for analysis, compute in ANALYSES.items():
        if analysis in asked.analyses:
            record = compute(record, loaded, plan, asked, absent)
    return dataclasses.replace(record, absent=(*record.absent, *absent))


def report_findings(
    source: str | Path | Any, metrics: Sequence[str] = (), baseline: str = BASELINE
) -> Findings:
    """What the report of SOURCE shows (every analysis, every scale): `run` and `demo` compute
    it once and print their verdict tables from it before the report lays it out."""
    return findings(source, metrics, JudgeOptions(baseline=baseline), asked=EVERYTHING)


def _empty(loaded: Source, empty: Absence) -> Findings:
    return Findings(
        source=loaded.name,
        kind=loaded.kind,
        metrics=(),
        scales=(),
        defaults=(),
        absent=(empty,),
        audit_dir=loaded.audit_dir,
        results_path=loaded.results_path,
    )


def _judgements(
    table: Table, plan: Sequence[PlannedFamily], loop: LoopSummary | None, absent: list[Absence]
) -> tuple[Judgement, ...]:
    """Every family judged once, as `run`, `stats` and the report show it; a family that
    cannot be judged is recorded as absent with the reason."""
    out = []
    for family in plan:
        judged = attempt(
            lambda f=family: with_note(judge_with_loop(table, f.metric, f.options, loop), f.note),
            Analysis.VERDICTS,
            f"{family.metric}:{family.scale or ''}",
            absent,
        )
        if judged is not None:
            out.append(judged)
    return tuple(out)
