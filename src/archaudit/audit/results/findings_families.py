"""Which families `findings` judges: baselines × metrics × scales, in the one place that knows
an audit's several baselines (`<arm>@<baseline>`, each judged without the others' arms), its
primary metrics (α split over them) and its scales."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from archaudit.audit.grid import store
from archaudit.audit.results.source import Source, SourceKind
from archaudit.audit.results.verdicts import audit_primaries, family_options
from archaudit.metrics import DOWNSTREAM_AVERAGE, PRIMARY_LOSS
from archaudit.names import BASELINE
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.records.table import Table


@dataclass(frozen=True)
class PlannedFamily:
    """One family to judge: its metric, scale (None: the table's only one), the options it is
    judged under (baseline, exclusions, α split) and the note that says how α was split."""

    metric: str
    scale: str | None
    options: JudgeOptions
    note: str = ""


@dataclass(frozen=True)
class FamilyPlan:
    metrics: tuple[str, ...]
    scales: tuple[str, ...]
    """The scales judged (empty: the table's only one, or the error asking for --scale)."""
    baselines: tuple[JudgeOptions, ...]
    """Per baseline, the options naming it and leaving the other baselines' arms out."""
    families: tuple[PlannedFamily, ...]
    named_metrics: bool
    """The caller named the metrics (else they are the source's defaults)."""


def families(
    source: Source,
    table: Table,
    metrics: Sequence[str],
    options: JudgeOptions,
    each_scale: bool | None,
) -> FamilyPlan:
    """Every (baseline, metric, scale) family of `table` to judge."""
    chosen = tuple(metrics) or default_metrics(source, table)
    for metric in chosen:
        table.check_metric(metric)
    scales = _scales(source, table, options, each_scale)
    baselines = _baselines(source, table, options)
    planned = []
    for base in baselines:
        for metric in chosen:
            for scale in scales or (None,):
                scaled = base.but(scale=scale)
                note = ""
                if source.audit_dir is not None:
                    scaled, note = family_options(source.audit_dir, table, metric, scaled)
                planned.append(PlannedFamily(metric, scale, scaled, note))
    return FamilyPlan(chosen, scales, baselines, tuple(planned), bool(metrics))


def default_metrics(source: Source, table: Table) -> tuple[str, ...]:
    """An audit's primary metrics, then the registry's primary loss and downstream average (an
    audit judges a downstream average outside its primaries as exploratory), those the table
    holds; a table with none of them: every metric."""
    own = audit_primaries(source.audit_dir) if source.audit_dir is not None else ()
    chosen = dict.fromkeys((*own, PRIMARY_LOSS, DOWNSTREAM_AVERAGE))
    return tuple(m for m in chosen if m in table.metrics) or table.metrics


def _scales(
    source: Source, table: Table, options: JudgeOptions, each_scale: bool | None
) -> tuple[str, ...]:
    if options.scale is not None:
        return (table.resolve_scale(options.scale),)
    every = source.kind == SourceKind.AUDIT if each_scale is None else each_scale
    return table.scales if every or len(table.scales) == 1 else ()


def _baselines(source: Source, table: Table, options: JudgeOptions) -> tuple[JudgeOptions, ...]:
    """An audit with several baselines judges each against its own arms (`<arm>@<b>`), unless
    `options` names one of them (or another arm); any other source judges `options.baseline`."""
    recorded = (
        (store.read_json(source.audit_dir / store.AUDIT_FILE) or {}).get("baselines", [])
        if source.audit_dir is not None
        else []
    )
    if len(recorded) < 2:
        table.check_arm(options.baseline, "baseline")
        return (options,)
    names = {f"{BASELINE}@{b}": f"@{b}" for b in recorded}
    chosen = [options.baseline] if options.baseline in table.arms else list(names)
    table.check_arm(chosen[0], "baseline")
    out = []
    for name in chosen:
        own = names.get(name, "")
        others = tuple(a for a in table.arms if own and not a.endswith(own))
        out.append(options.but(baseline=name, exclude=(*options.exclude, *others)))
    return tuple(out)


def chosen_defaults(plan: FamilyPlan, options: JudgeOptions) -> tuple[str, ...]:
    """What the source chose where the caller named nothing: said in every header."""
    said = []
    if not plan.named_metrics:
        said.append(f"metrics {', '.join(plan.metrics)}")
    if options.scale is None and len(plan.scales) > 1:
        said.append(f"scales {', '.join(plan.scales)}")
    if len(plan.baselines) > 1:
        said.append(f"baselines {', '.join(b.baseline for b in plan.baselines)}")
    return tuple(said)
