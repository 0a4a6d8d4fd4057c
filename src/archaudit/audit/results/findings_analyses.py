"""The slices of `Findings` beyond the verdicts, each computed once from the loaded table and
the judgements (`ANALYSES`: one function per `Analysis`, in the order they depend on each
other). Each records what it could not make, with the reason the analysis gave."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from archaudit.audit.results.findings_families import FamilyPlan
from archaudit.audit.results.findings_record import (
    Absence,
    Analysis,
    Asked,
    Findings,
    attempt,
)
from archaudit.audit.results.power_cases import power_case
from archaudit.audit.results.settings import AggregateSettings
from archaudit.audit.results.source import Source
from archaudit.audit.results.verdicts import family_options
from archaudit.metrics import lower_is_better
from archaudit.names import BASELINE
from archaudit.stats.records.table import Table

if TYPE_CHECKING:
    from archaudit.stats.analyses.aggregate import Aggregates
    from archaudit.stats.analyses.baseline_transfer import BaselineTransfer
    from archaudit.stats.choices.options import JudgeOptions
    from archaudit.stats.judging.judgement import Judgement

Slice = Callable[[Findings, Source, FamilyPlan, Asked, list[Absence]], Findings]


def _table(record: Findings) -> Table:
    assert record.table is not None  # findings without a table run no analysis
    return record.table


def _target(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """The prediction at the audit's [target] scale, and each judgement's `at_target` slot."""
    from archaudit.audit.results.ladder import target_prediction
    from archaudit.stats.predictions.predict import with_prediction

    if loaded.audit_dir is None and not loaded.name.endswith(".toml"):
        return record  # a [target] is read from the audit file
    base = plan.baselines[0].baseline
    prediction = attempt(
        lambda: target_prediction(
            Path(loaded.name), loaded.audit_dir, _table(record), plan.metrics, base
        ),
        Analysis.TARGET,
        "target",
        absent,
    )
    if prediction is None:
        return record
    judged = tuple(with_prediction(j, prediction) for j in record.judgements)
    return dataclasses.replace(record, prediction=prediction, judgements=judged)


def _transfers(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """Cross-scale transfer per baseline and metric, from the judgements at its two scales."""
    from archaudit.stats.analyses.transfer import transfer_between, two_scales

    table, settings = _table(record), asked.settings.transfer
    if len(table.scales) < 2:
        reason = (
            f"the results hold one scale ({table.scales[0]}); rank shifts need the arms "
            "trained at two scales"
        )
        absent.append(Absence(Analysis.TRANSFER, "scales", reason))
        return record
    small, large = two_scales(table, settings.small, settings.large)
    out = []
    for base in plan.baselines:
        for metric in plan.metrics:
            pair = [_judged(record, metric, s, base.baseline) for s in (small, large)]
            if pair[0] is None or pair[1] is None:
                why = _why_unjudged(record, absent) or f"{metric} is not judged at both scales"
                absent.append(Absence(Analysis.TRANSFER, metric, why))
                continue
            found = attempt(
                lambda p=pair: transfer_between(table, p[0], p[1], settings.confidence),
                Analysis.TRANSFER,
                metric,
                absent,
            )
            out += [found] if found is not None else []
    return dataclasses.replace(record, transfers=tuple(out))


def _why_unjudged(record: Findings, absent: list[Absence]) -> str | None:
    """The reason a family was not judged: the record's, or one recorded while it is built."""
    so_far = next((a.reason for a in absent if a.analysis == Analysis.VERDICTS), None)
    return so_far or record.why(Analysis.VERDICTS)


def _judged(record: Findings, metric: str, scale: str, baseline: str) -> Judgement | None:
    return next(
        (
            j
            for j in record.judgements
            if (j.metric, j.scale, j.baseline) == (metric, scale, baseline)
        ),
        None,
    )


def _baseline_transfers(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """Δ and verdicts of each arm against every baseline (several named, or an audit's own)."""
    names = asked.settings.baselines or tuple(
        b.baseline.removeprefix(f"{BASELINE}@") for b in plan.baselines
    )
    if len(names) < 2:
        return record
    options = plan.baselines[0].but(exclude=())
    out = []
    for metric in plan.metrics:
        for scale in plan.scales or (None,):
            found = attempt(
                lambda m=metric, s=scale: _across_baselines(record, loaded, m, s, names, options),
                Analysis.BASELINES,
                f"{metric}:{scale or ''}",
                absent,
            )
            out += [found] if found is not None else []
    return dataclasses.replace(record, baseline_transfers=tuple(out))


def _across_baselines(
    record: Findings,
    loaded: Source,
    metric: str,
    scale: str | None,
    names: tuple[str, ...],
    options: JudgeOptions,
) -> BaselineTransfer:
    """The record's own verdicts where it judged every baseline's family (an audit's layout:
    the same α split and loop as `stats`), else each baseline judged under the audit's family
    options, so that no verdict here differs from the one `stats` prints for the same family."""
    from archaudit.stats.analyses.baseline_transfer import (
        compare_baselines,
        transfer_across_baselines,
    )

    own = {
        name: next(
            (
                j
                for j in record.judgements
                if (j.metric, j.baseline) == (metric, f"{BASELINE}@{name}")
                and scale in (None, j.scale)
            ),
            None,
        )
        for name in names
    }
    judged = {name: j for name, j in own.items() if j is not None}
    if len(judged) == len(names):
        return compare_baselines(judged)
    table = _table(record)
    scaled = options.but(scale=scale, baseline=names[0])
    if loaded.audit_dir is not None:
        scaled, _ = family_options(loaded.audit_dir, table, metric, scaled)
    return transfer_across_baselines(table, metric, names, scaled)


def _interactions(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """A factorial audit's main effects and interactions, per family."""
    from archaudit.stats.analyses.interactions import interactions

    table, separator = _table(record), asked.settings.interactions.separator
    if not any(separator in arm for arm in table.arms):
        reason = (
            "the audit is not factorial: no arm combines choices (names like "
            f"qk_norm{separator}gqa), so there are no interactions to show"
        )
        absent.append(Absence(Analysis.INTERACTIONS, "arms", reason))
        return record
    out = []
    for family in plan.families:
        found = attempt(
            lambda f=family: interactions(table, f.metric, f.options, separator=separator),
            Analysis.INTERACTIONS,
            f"{family.metric}:{family.scale or ''}",
            absent,
        )
        out += [found] if found is not None else []
    return dataclasses.replace(record, interactions=tuple(out))


def _aggregates(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """IQM, P(arm > baseline) and ASO over the per-task scores, per baseline and scale."""
    table, settings = _table(record), asked.settings.aggregates
    out = []
    for base in plan.baselines:
        for scale in plan.scales or (None,):
            found = attempt(
                lambda s=scale, b=base: _aggregate(table, b.but(scale=s), settings),
                Analysis.AGGREGATES,
                scale or "",
                absent,
            )
            out += [found] if found is not None else []
    return dataclasses.replace(record, aggregates=tuple(out))


def _aggregate(table: Table, options: JudgeOptions, settings: AggregateSettings) -> Aggregates:
    from archaudit.stats.analyses.aggregate import aggregate

    return aggregate(
        table, options, metrics=settings.task_metrics, n_boot=settings.n_boot, seed=settings.seed,
        confidence=settings.confidence, aso_threshold=settings.aso_threshold,
    )  # fmt: skip


def _decouplings(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """Loss against downstream per baseline and scale, read from the judgements shown."""
    from archaudit.stats.analyses.decoupling import decouple

    settings = asked.settings.decoupling
    loss = settings.loss_metric or next((m for m in plan.metrics if lower_is_better(m)), None)
    down = settings.downstream_metric or next(
        (m for m in plan.metrics if not lower_is_better(m)), None
    )
    if loss is None or down is None:
        reason = (
            "decoupling compares a loss with a downstream metric; judged here: "
            f"{', '.join(plan.metrics)} (name both with --metric)"
        )
        absent.append(Absence(Analysis.DECOUPLING, "metrics", reason))
        return record
    out = []
    for base in plan.baselines:
        for j in record.judgements:
            if (j.metric, j.baseline) != (loss, base.baseline):
                continue
            other = _judged(record, down, j.scale, base.baseline)
            found = (
                attempt(
                    lambda a=j, b=other: decouple(a, b, settings.margin),
                    Analysis.DECOUPLING,
                    j.scale,
                    absent,
                )
                if other is not None
                else None
            )
            out += [found] if found is not None and found.arms else []
    return dataclasses.replace(record, decouplings=tuple(out))


def _power(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    cases = tuple(case for j in record.judgements if (case := power_case(j)) is not None)
    return dataclasses.replace(record, power=cases)


def _snr(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """Seed σ against the spread of the arm means, every metric (or the ones named)."""
    from archaudit.stats.analyses.snr import signal_to_noise

    named = plan.metrics if plan.named_metrics else None
    found = attempt(
        lambda: signal_to_noise(_table(record), plan.baselines[0], metrics=named),
        Analysis.SNR,
        "metrics",
        absent,
    )
    return dataclasses.replace(record, snr=found)


def _stability(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    return with_stability(record, loaded.audit_dir, absent)


def with_stability(record: Findings, audit_dir: Path | None, absent: list[Absence]) -> Findings:
    """The audit's stored stress test (`_stress/stress.json`, written by `archaudit stress`),
    if it has one, also before any run of the audit itself finished; an unreadable one is
    absent, with the reason."""
    from archaudit.audit.stability.stress import STRESS_DIR
    from archaudit.audit.stability.stress_result import RESULT_FILE, read_result

    path = audit_dir / STRESS_DIR / RESULT_FILE if audit_dir else None
    if path is None or not path.is_file():
        return record
    stored = attempt(lambda: read_result(path), Analysis.STRESS, str(path), absent)
    return dataclasses.replace(record, stability=stored) if stored else record


def _scaling(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """The scaling law fitted to one arm's runs over every scale (`Settings.scaling`)."""
    from archaudit.stats.analyses.scaling import fit_scaling

    options = asked.settings.scaling
    fit = attempt(
        lambda: fit_scaling(_table(record), options), Analysis.SCALING, options.arm, absent
    )
    return dataclasses.replace(record, scaling=fit)


def _seeding(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """Per fixed-design judgement, whether one more seed could change each arm's verdict (a
    judgement of the sequential loop is the loop's to extend, not this advice's)."""
    from archaudit.stats.analyses.adaptive import adaptive_seeding

    out = []
    for j in record.judgements:
        if j.sequential is not None:
            continue
        found = attempt(
            lambda a=j: adaptive_seeding(_table(record), a),
            Analysis.SEEDING,
            f"{j.metric}:{j.scale}",
            absent,
        )
        out += [found] if found is not None else []
    return dataclasses.replace(record, seeding=tuple(out))


def _items(
    record: Findings, loaded: Source, plan: FamilyPlan, asked: Asked, absent: list[Absence]
) -> Findings:
    """Each arm paired with the baseline on the benchmark items of the folder read (an audit's,
    or an `import lm-eval` folder's items.csv)."""
    from archaudit.stats.analyses.item_pairs import pair_items

    folder = loaded.audit_dir or (Path(loaded.name) if Path(loaded.name).is_dir() else None)
    if folder is None:
        reason = f"{loaded.name} is a results file; item-level pairs read a folder's items.csv"
        absent.append(Absence(Analysis.ITEMS, "source", reason))
        return record
    options = asked.settings.items
    pairs = attempt(lambda: pair_items(folder, options), Analysis.ITEMS, "items", absent)
    return dataclasses.replace(record, items=pairs or ())


ANALYSES: dict[Analysis, Slice] = {
    Analysis.TARGET: _target,
    Analysis.TRANSFER: _transfers,
    Analysis.BASELINES: _baseline_transfers,
    Analysis.INTERACTIONS: _interactions,
    Analysis.AGGREGATES: _aggregates,
    Analysis.DECOUPLING: _decouplings,
    Analysis.POWER: _power,
    Analysis.SNR: _snr,
    Analysis.STRESS: _stability,
    Analysis.SCALING: _scaling,
    Analysis.SEEDING: _seeding,
    Analysis.ITEMS: _items,
}
"""Each slice after the verdicts, in order: the prediction fills the judgements' slot first."""
