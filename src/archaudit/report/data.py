"""Everything the report shows, gathered into plain dataclasses: the one place that runs
`archaudit.stats` and reads audit directories. The other report modules take only names from
stats (the verdict labels, what a correction's error rate is called) and build.py its table
loader.

The report never computes a statistic: verdicts, intervals, error rates, decoupling, transfer,
interactions and power all come from `archaudit.stats`, typed (`Judgement`, ...). A value stats
leaves undefined (NaN: no design rate without a tested arm, no interval for an untested arm)
becomes None here and "not computed" on the page. When the stats API changes, this module is
what to adapt.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from archaudit.audit import store
from archaudit.audit.record import RoutingAtEnd, RunRecord
from archaudit.audit.spec import resolve_audit_dir
from archaudit.audit.stress import STRESS_DIR
from archaudit.audit.stress_result import RESULT_FILE, StressResult, read_result
from archaudit.errors import ArchauditError, DataError
from archaudit.report.palette import Colour, arm_colours
from archaudit.rundir import ENV, EVENTS
from archaudit.stats import (
    AuditDesign,
    cross_scale_transfer,
    decoupling,
    interactions,
    judge,
    load_table,
    seeds_needed,
)
from archaudit.stats.aggregate import TASK_SUFFIX, aggregate
from archaudit.stats.errors import EmptyTableError
from archaudit.stats.family import resolve_direction
from archaudit.stats.judge import Judgement
from archaudit.stats.options import JudgeOptions
from archaudit.stats.power import PowerCurve, power_curve
from archaudit.stats.sequential import (
    SequentialRule,
    repeated_interval,
    sequential_design_rate,
    sequential_power_curve,
)
from archaudit.stats.snr import SignalToNoise, signal_to_noise
from archaudit.stats.table import RESULTS_FILE, Table
from archaudit.stats.verdicts import NOISE_SIGMAS

DOWNSTREAM_METRIC = "downstream_avg"
PRIMARY_METRICS = ("val_loss", DOWNSTREAM_METRIC)
"""Judged by default when present: the audit's loss and its downstream macro average."""
POWER_EFFECTS = (3.0, 5.0, 10.0)
"""Effects (in σ) for which the power section says how many seeds a claim would need."""
FIXED_INTERVAL = "Bonferroni-simultaneous (1 − α) interval of the fixed design"
REPEATED_INTERVAL = (
    "repeated confidence interval of the sequential loop's last test of each arm (its Welch SE "
    "and df, or the 6σ bound for one seed, at its last look's O'Brien–Fleming boundary and Holm "
    "level): it excludes 0 exactly when that test crosses its boundary"
)
FACTOR_SEPARATOR = "+"

T = TypeVar("T")


@dataclass(frozen=True)
class ArmRow:
    """One arm on one metric at one scale. Δ is signed so that positive = better."""

    arm: str
    family: str | None
    tuned: bool
    n_seeds: int
    n_diverged: int
    diverged_step: int | None
    mean: float
    sd: float
    delta: float
    interval: tuple[float, float] | None
    """Bonferroni-simultaneous (1 − α) interval for Δ (stats.judge), or for an arm the
    sequential loop judged its repeated confidence interval (stats.sequential); None when not
    tested. `Verdicts.interval_kind` says which."""
    seed_deltas: tuple[float, ...]
    """Each finished seed's value minus the baseline mean, signed like Δ (the forest's dots)."""
    test: str | None
    p: float
    p_adj: float
    verdict: str
    mde: float
    grade: str
    grade_missing: tuple[str, ...]


@dataclass(frozen=True)
class Verdicts:
    """One family judged on one metric at one scale."""

    metric: str
    scale: str
    lower_is_better: bool
    baseline: str
    baseline_mean: float
    baseline_n: int
    sigma: float
    sigma_dof: int
    m: int
    correction: str
    alpha: float
    power_target: float
    fwer_uncorrected: float
    design_fwer: float | None
    """The design's family-wise false-positive rate measured by simulation (stats-core)."""
    design_mde: float | None
    """The design's minimum detectable effect at the target power, metric units (stats-core)."""
    reference: str | None
    calibrated: bool | None
    noise_band: float
    """NOISE_SIGMAS·σ: effects inside it are within noise by rule."""
    arms: tuple[ArmRow, ...]
    notes: tuple[str, ...]
    interval_kind: str = FIXED_INTERVAL
    audit_design: AuditDesign | None = None
    """The design judged (None when no arm was tested): what the power curve is computed for."""
    rule: SequentialRule | None = None
    """The sequential loop's stopping rule, when the loop judged this family."""
    design_panel_worst: float | None = None
    """The noise panel's worst measured family-wise rate for this design (stats-core)."""


@dataclass(frozen=True)
class ScatterPoint:
    arm: str
    family: str | None
    loss_change: float
    downstream_delta: float
    decoupled: bool
    kind: str | None


@dataclass(frozen=True)
class Scatter:
    """Loss change against downstream Δ at one scale (stats.decoupling)."""

    scale: str
    loss_metric: str
    downstream_metric: str
    loss_band: float
    """|r_L| a loss can be flat within (the widest arm's equivalence margin, relative)."""
    points: tuple[ScatterPoint, ...]


@dataclass(frozen=True)
class BumpArm:
    arm: str
    family: str | None
    rank_small: float
    rank_large: float
    verdict_large: str


@dataclass(frozen=True)
class Bump:
    """Rank of every arm at two scales (stats.cross_scale_transfer)."""

    metric: str
    small: str
    large: str
    spearman: float
    spearman_interval: tuple[float, float] | None
    kendall: float
    sign_preserved: float
    arms: tuple[BumpArm, ...]
    diverged_only_at_large: tuple[str, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class TaskAggregate:
    """One arm's aggregate over the suite's tasks × seeds (stats.aggregate, rliable's)."""

    arm: str
    n_seeds: int
    iqm: float
    iqm_interval: tuple[float, float] | None
    prob_improvement: float
    prob_interval: tuple[float, float] | None


@dataclass(frozen=True)
class Aggregate:
    """rliable's aggregates at one scale: IQM and P(arm > baseline) with stratified-bootstrap
    intervals over the per-task scores."""

    scale: str
    tasks: int
    confidence: float
    arms: tuple[TaskAggregate, ...]
    taus: tuple[float, ...]
    profiles: dict[str, tuple[float, ...]]
    """Arm → its performance profile over `taus` (share of seeds × tasks scores above τ)."""


@dataclass(frozen=True)
class Combination:
    arm: str
    factors: tuple[str, ...]
    observed: float
    predicted: float
    interaction_sigmas: float
    harmful_count: int


@dataclass(frozen=True)
class Heatmap:
    """A factorial audit's main effects and interactions in σ (stats.interactions)."""

    metric: str
    scale: str
    sigma: float
    factors: tuple[str, ...]
    main_sigmas: dict[str, float]
    combinations: tuple[Combination, ...]
    harmful: tuple[str, ...]
    r2_additive: float
    r2_harmful_count: float


@dataclass(frozen=True)
class PowerCase:
    """The power of one judged family's design as it ran (stats.power, or the sequential
    loop's simulated power): the curve, its MDE and the table's MDE are one record."""

    metric: str
    scale: str
    sigma: float
    arm_seeds: tuple[int, ...]
    """Distinct seeds per tested arm."""
    baseline_seeds: int
    m: int
    curve: PowerCurve
    seeds_for: tuple[tuple[float, int | None], ...]
    """(effect in σ, seeds per arm a balanced design needs; None = more than SEEDS_CAP)."""


@dataclass(frozen=True)
class Curve:
    """One run's training curve (metrics.jsonl) and where it diverged (DONE)."""

    arm: str
    family: str | None
    scale: str
    seed: int
    steps: tuple[int, ...]
    loss: tuple[float, ...]
    grad_norm: tuple[float, ...]
    diverged_step: int | None
    val_steps: tuple[int, ...] = ()
    val_loss: tuple[float, ...] = ()
    """The validation loss the trainer recorded every `eval_every` steps."""


@dataclass(frozen=True)
class Band:
    """One arm's curve at one scale over its seeds: the mean per step and the seeds' range."""

    arm: str
    scale: str
    seeds: int
    steps: tuple[int, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


TRAIN_ZOOM = 2 / 3
"""The training-loss panel starts here (share of the run): the early drop from ~5.5 would
squeeze the differences at the end into a hair-thin band."""


def bands(curves: Sequence[Curve], scale: str, kind: str) -> tuple[Band, ...]:
    """Per arm at `scale`, the seeds that did not diverge, on the steps they all recorded:
    `kind` "val" is the recorded validation loss, "train" the last third of the training loss."""
    runs: dict[str, list[dict[int, float]]] = {}
    for c in curves:
        if c.scale != scale or c.diverged_step is not None:
            continue
        if kind == "val":
            points = dict(zip(c.val_steps, c.val_loss, strict=True))
        else:
            first = TRAIN_ZOOM * max(c.steps, default=0)
            points = {t: v for t, v in zip(c.steps, c.loss, strict=True) if t >= first}
        if points:
            runs.setdefault(c.arm, []).append(points)
    out = []
    for arm, seeds in runs.items():
        steps = sorted(set.intersection(*(set(p) for p in seeds)))
        if steps:
            values = [[p[t] for p in seeds] for t in steps]
            out.append(
                Band(
                    arm=arm,
                    scale=scale,
                    seeds=len(seeds),
                    steps=tuple(steps),
                    mean=tuple(sum(v) / len(v) for v in values),
                    low=tuple(min(v) for v in values),
                    high=tuple(max(v) for v in values),
                )
            )
    return tuple(out)


@dataclass(frozen=True)
class Routing:
    """One MoE run's routing at its last logged step (metrics.jsonl) and its collapse events."""

    arm: str
    scale: str
    seed: int
    step: int
    load: tuple[tuple[float, ...], ...]
    """Per MoE layer: each expert's share of the chosen assignments (sums to 1)."""
    dropped: float
    entropy: float
    collapses: tuple[tuple[int, int], ...]
    """(step, layer) of every router_collapse event in events.jsonl."""


@dataclass(frozen=True)
class ScaleScope:
    name: str
    model: dict[str, Any]
    tokens: int | None
    arms: int
    seeds: tuple[int, ...]
    """Distinct seed counts per arm at this scale."""


@dataclass(frozen=True)
class Scope:
    scales: tuple[ScaleScope, ...]
    recipe: dict[str, Any]
    """The shared recipe (empty for a CSV)."""
    suite: str | None
    tuned_arms: tuple[str, ...]
    params: tuple[tuple[str, str, int, int], ...] = ()
    """(arm, scale, total, active) parameters, the mean over seeds of each run's count."""


@dataclass(frozen=True)
class Provenance:
    source: str
    source_sha256: str | None
    """sha256 of the results file the verdicts were read from."""
    recipe_hashes: tuple[str, ...]
    environments: tuple[dict[str, Any], ...]
    """Distinct env.json records of the runs (versions, device, source hash)."""
    command: str | None


@dataclass(frozen=True)
class Progress:
    """How far a running audit is (a partial report)."""

    finished: int
    total: int
    states: dict[str, int]


@dataclass(frozen=True)
class ReportData:
    source: str
    kind: str
    """"audit" or "csv"."""
    title: str
    metrics: tuple[str, ...]
    verdicts: tuple[Verdicts, ...]
    scatters: tuple[Scatter, ...]
    bumps: tuple[Bump, ...]
    heatmaps: tuple[Heatmap, ...]
    aggregates: tuple[Aggregate, ...]
    power: tuple[PowerCase, ...]
    curves: tuple[Curve, ...]
    scope: Scope
    provenance: Provenance
    progress: Progress | None
    protocol_notes: dict[str, tuple[tuple[str | None, str], ...]]
    """Arm → (the scale it concerns or None for every scale, the warning): the audit's
    protocol warnings (R5–R7) and the seeds the sequential loop added, stored at plan time."""
    routing: tuple[Routing, ...] = ()
    """Runs with mixture-of-experts layers: their final expert load, drops and collapses."""
    absent: dict[str, str] = field(default_factory=dict)
    """Analysis → why it could not be made (the error stats raised, or what is missing)."""
    colours: dict[str, Colour] = field(default_factory=dict)
    """Arm → its one colour on every figure of the page (report.palette)."""
    signal: SignalToNoise | None = None
    """Seed σ, spread and SNR per metric (`archaudit.stats.snr`)."""
    stress: StressResult | None = None
    """The audit's stress test (`archaudit stress`), when it has one."""


SEEDS_CAP = 100


def gather(
    source: str | Path,
    *,
    metrics: Sequence[str] = (),
    baseline: str = "baseline",
    command: str | None = None,
) -> ReportData:
    """Read SOURCE (an audit directory, an audit file or a results CSV) and run every analysis
    the report shows. Analyses that do not apply are recorded in `absent` with the reason."""
    audit_dir, csv_path = _resolve(Path(source))
    absent: dict[str, str] = {}
    table = _load(csv_path, audit_dir, absent)
    if table is not None:
        table.check_arm(baseline, "baseline")
    chosen = _choose_metrics(table, metrics) if table else ()
    judged = _verdicts(table, chosen, baseline, absent, audit_dir) if table else ()
    power = tuple(case for v in judged if (case := _power(v)) is not None)
    verdicts = _with_power_mde(judged, power)
    runs = _runs(audit_dir) if audit_dir else ()
    curves = tuple(curve for run in runs if (curve := _curve(run)) is not None)
    stress = _stress(audit_dir, absent) if audit_dir else None
    arms = (*(table.arms if table else ()), *(c.arm for c in curves))
    arms += tuple(a.arm for a in stress.arms) if stress else ()
    return ReportData(
        source=str(source),
        kind="audit" if audit_dir else "csv",
        title=_title(audit_dir, csv_path),
        metrics=chosen,
        verdicts=verdicts,
        scatters=_scatters(table, chosen, baseline, absent) if table else (),
        bumps=_bumps(table, chosen, baseline, absent) if table else (),
        heatmaps=_heatmaps(table, chosen, baseline, absent) if table else (),
        aggregates=_aggregates(table, baseline, absent) if table else (),
        power=power,
        curves=curves,
        scope=_scope(table, runs, audit_dir),
        provenance=_provenance(csv_path, runs, command),
        progress=_progress(runs) if audit_dir else None,
        protocol_notes=_protocol_notes(audit_dir),
        routing=tuple(r for run in runs if (r := _routing(run)) is not None),
        absent=absent,
        colours=arm_colours(arms, baseline),
        signal=_attempt(
            lambda: signal_to_noise(table, JudgeOptions(baseline=baseline)), "snr", absent
        )
        if table
        else None,
        stress=stress,
    )


def _stress(audit_dir: Path, absent: dict[str, str]) -> StressResult | None:
    """The stored stress result (`_stress/stress.json`); None when the audit has none."""
    path = audit_dir / STRESS_DIR / RESULT_FILE
    return _attempt(lambda: read_result(path), "stress", absent) if path.is_file() else None


# ---------------------------------------------------------------------------------------------
# verdicts and analyses (all computed by archaudit.stats)


def _attempt(compute: Callable[..., T], key: str, absent: dict[str, str]) -> T | None:
    """The analysis' result, or None with the user-facing reason stats gave.

    `compute` is called with no arguments. Its type says `...` because the callers' lambdas
    bind their loop variables as default arguments, and mypy cannot infer those."""
    try:
        return compute()
    except ArchauditError as err:
        absent.setdefault(key, str(err))
        return None


def _load(csv_path: Path, audit_dir: Path | None, absent: dict[str, str]) -> Table | None:
    """The results table. A running audit may have no finished run yet: then the report is
    partial. A CSV the user named must be readable: its errors stop the report."""
    if audit_dir is not None and not csv_path.is_file():
        absent["table"] = f"{csv_path} does not exist yet: no run of the audit has finished"
        return None
    try:
        return load_table(csv_path)
    except EmptyTableError as err:
        if audit_dir is None:
            raise
        absent["table"] = f"no run of the audit has finished yet ({err})"
        return None


def _choose_metrics(table: Table, metrics: Sequence[str]) -> tuple[str, ...]:
    for metric in metrics:
        table.check_metric(metric)
    if metrics:
        return tuple(metrics)
    primary = tuple(m for m in PRIMARY_METRICS if m in table.metrics)
    return primary or table.metrics


def _lower_is_better(metric: str) -> bool:
    return resolve_direction(metric, None)


def _verdicts(
    table: Table,
    metrics: Sequence[str],
    baseline: str,
    absent: dict[str, str],
    audit_dir: Path | None,
) -> tuple[Verdicts, ...]:
    """Every family judged as `archaudit stats` judges it (the default tests: one recipe does
    not make the arms' seed variances equal, docs/verdicts.md). An audit that ran sequentially
    takes its verdicts from the loop's summary instead: the fixed-design p-values would ignore
    its looks."""
    families, rule = _sequential_summary(audit_dir)
    out = []
    for metric in metrics:
        for scale in table.scales:
            judgement = _attempt(
                lambda m=metric, s=scale: judge(
                    table,
                    m,
                    JudgeOptions(baseline=baseline, lower_is_better=_lower_is_better(m), scale=s),
                ),
                f"verdicts:{metric}:{scale}",
                absent,
            )
            if judgement is not None:
                verdicts = _from_judgement(judgement, table)
                family = families.get((metric, scale))
                out.append(_sequential(verdicts, family, rule) if family else verdicts)
    return tuple(out)


def _sequential_summary(
    audit_dir: Path | None,
) -> tuple[dict[tuple[str, str], dict[str, Any]], SequentialRule | None]:
    """({(metric, scale): family}, its rule) of a sequential audit's summary; ({}, None) when
    the audit did not run sequentially (or wrote no rule: a summary of an older loop)."""
    path = audit_dir / store.SEQUENTIAL_DIR / store.SEQUENTIAL_SUMMARY if audit_dir else None
    summary = store.read_json(path) if path else None
    if not summary:
        return {}, None
    families = {(f["metric"], f["scale"]): f for f in summary["families"]}
    rule = summary.get("rule")
    return families, SequentialRule(**rule) if rule else None


def _sequential(
    verdicts: Verdicts, family: dict[str, Any], rule: SequentialRule | None
) -> Verdicts:
    """The loop's verdicts, t and p per arm, and its design's measured error rate and MDE."""
    rows = {row["arm"]: row for row in family["arms"]}
    arms = tuple(
        dataclasses.replace(
            arm,
            test="sequential",
            interval=_repeated_interval(rows[arm.arm]),
            p=rows[arm.arm]["p"],
            p_adj=math.nan,
            verdict=rows[arm.arm]["verdict"],
        )
        if arm.arm in rows
        else arm
        for arm in verdicts.arms
    )
    fwer = mde = worst = None
    if rule is not None:
        rate = sequential_design_rate(len(rows), rule)
        fwer, mde = rate.fwer, rate.mde_sigmas * family["sigma"]
        worst = rate.panel_worst.fwer if rate.panel_worst else None
    note = (
        "Verdicts from the sequential loop (O'Brien–Fleming alpha spending within each arm, "
        "Holm across arms); p is the last look's, with no single corrected p."
    )
    return dataclasses.replace(
        verdicts,
        sigma=family["sigma"],
        sigma_dof=family["sigma_dof"],
        noise_band=NOISE_SIGMAS * family["sigma"],
        design_fwer=fwer,
        design_mde=mde,
        design_panel_worst=worst,
        arms=arms,
        notes=(*verdicts.notes, note),
        interval_kind=REPEATED_INTERVAL,
        rule=rule,
    )


def _repeated_interval(row: dict[str, Any]) -> tuple[float, float] | None:
    """The interval dual to the loop's last test of the arm; None for a summary of an older
    loop (no SE stored) or an arm without a finite test."""
    needed = (row.get(k, math.nan) for k in ("delta", "se", "df", "threshold"))
    delta, se, df, threshold = (float(v) for v in needed)
    if row["seeds"] < 1 or not all(map(math.isfinite, (delta, se, df, threshold))):
        return None
    return _finite_interval(repeated_interval(delta, se, df, threshold))


def _seed_deltas(j: Judgement, table: Table, arm: str) -> tuple[float, ...]:
    sign = -1.0 if j.lower_is_better else 1.0
    values = (row.value for row in table.rows_for(j.metric, j.scale, arm))
    return tuple(sign * (v - j.baseline_mean) for v in values if math.isfinite(v))


def _from_judgement(j: Judgement, table: Table) -> Verdicts:
    return Verdicts(
        metric=j.metric,
        scale=j.scale,
        lower_is_better=j.lower_is_better,
        baseline=j.baseline,
        baseline_mean=j.baseline_mean,
        baseline_n=j.baseline_n,
        sigma=j.sigma,
        sigma_dof=j.sigma_dof,
        m=j.m,
        correction=j.correction,
        alpha=j.alpha,
        power_target=j.power_target,
        fwer_uncorrected=j.fwer_uncorrected,
        design_fwer=j.design_fwer if math.isfinite(j.design_fwer) else None,
        design_panel_worst=j.design_panel_worst if math.isfinite(j.design_panel_worst) else None,
        design_mde=j.design.mde_sigmas * j.sigma if j.design is not None else None,
        reference=j.reference,
        calibrated=j.calibrated,
        noise_band=NOISE_SIGMAS * j.sigma,
        arms=tuple(
            ArmRow(
                arm=a.arm,
                family=a.family,
                tuned=a.tuned,
                n_seeds=a.n_seeds,
                n_diverged=a.n_diverged,
                diverged_step=a.diverged_step,
                mean=a.mean,
                sd=a.sd,
                delta=a.delta,
                interval=_finite_interval(a.interval),
                seed_deltas=_seed_deltas(j, table, a.arm),
                test=a.test,
                p=a.p,
                p_adj=a.p_adj,
                verdict=a.verdict,
                mde=a.mde,
                grade=a.grade,
                grade_missing=tuple(a.grade_missing),
            )
            for a in j.arms
        ),
        notes=tuple(j.notes),
        audit_design=j.design.design if j.design is not None else None,
    )


def _finite_interval(value: Sequence[float] | None) -> tuple[float, float] | None:
    if value is None or not all(math.isfinite(v) for v in value):
        return None
    return (float(value[0]), float(value[1]))


def _loss_and_downstream(metrics: Sequence[str]) -> tuple[str | None, str | None]:
    loss = next((m for m in metrics if _lower_is_better(m)), None)
    downstream = next((m for m in metrics if not _lower_is_better(m)), None)
    return loss, downstream


def _scatters(
    table: Table, metrics: Sequence[str], baseline: str, absent: dict[str, str]
) -> tuple[Scatter, ...]:
    loss, downstream = _loss_and_downstream(metrics)
    if loss is None or downstream is None:
        absent["decoupling"] = (
            "decoupling compares a loss with a downstream metric; the report judged only "
            f"{', '.join(metrics)} (pass --metric for both)"
            if DOWNSTREAM_METRIC in table.metrics
            else f"the results hold no {DOWNSTREAM_METRIC} (the audit evaluated no downstream "
            "suite), so loss and downstream cannot be compared"
        )
        return ()
    out = []
    for scale in table.scales:
        result = _attempt(
            lambda s=scale: decoupling(
                table,
                JudgeOptions(baseline=baseline, scale=s),
                loss_metric=loss,
                downstream_metric=downstream,
            ),
            "decoupling",
            absent,
        )
        if result is not None and result.arms:
            out.append(
                Scatter(
                    scale=result.scale,
                    loss_metric=result.loss_metric,
                    downstream_metric=result.downstream_metric,
                    loss_band=result.loss_band,
                    points=tuple(
                        ScatterPoint(
                            a.arm, a.family, a.loss_change, a.downstream_delta, a.decoupled, a.kind
                        )
                        for a in result.arms
                    ),
                )
            )
    return tuple(out)


def _bumps(
    table: Table, metrics: Sequence[str], baseline: str, absent: dict[str, str]
) -> tuple[Bump, ...]:
    if len(table.scales) < 2:
        absent["transfer"] = (
            f"the results hold one scale ({table.scales[0]}); rank shifts need the arms "
            "trained at two scales"
        )
        return ()
    out = []
    for metric in metrics:
        result = _attempt(
            lambda m=metric: cross_scale_transfer(table, m, JudgeOptions(baseline=baseline)),
            "transfer",
            absent,
        )
        if result is None:
            continue
        out.append(
            Bump(
                metric=result.metric,
                small=result.small,
                large=result.large,
                spearman=result.spearman,
                spearman_interval=_finite_interval(result.spearman_interval),
                kendall=result.kendall,
                sign_preserved=result.sign_preserved,
                arms=tuple(
                    BumpArm(a.arm, table.family(a.arm), a.rank_small, a.rank_large, a.verdict_large)
                    for a in result.arms
                ),
                diverged_only_at_large=tuple(result.diverged_only_at_large),
                notes=tuple(result.notes),
            )
        )
    return tuple(out)


def _aggregates(table: Table, baseline: str, absent: dict[str, str]) -> tuple[Aggregate, ...]:
    """IQM and probability of improvement over the per-task scores, per scale, when the results
    have them (an audit with a downstream suite)."""
    if sum(m.endswith(TASK_SUFFIX) for m in table.metrics) < 2:
        absent["aggregates"] = (
            f"the results hold fewer than 2 per-task metrics ('<task>{TASK_SUFFIX}'): the audit "
            "scored no multi-task downstream suite"
        )
        return ()
    out = []
    for scale in table.scales:
        result = _attempt(
            lambda s=scale: aggregate(table, JudgeOptions(baseline=baseline, scale=s)),
            "aggregates",
            absent,
        )
        if result is not None:
            arms = tuple(
                TaskAggregate(
                    a.arm,
                    a.n_seeds,
                    a.iqm,
                    _finite_interval(a.iqm_interval),
                    a.prob_improvement,
                    _finite_interval(a.prob_improvement_interval),
                )
                for a in result.arms
            )
            out.append(
                Aggregate(
                    result.scale,
                    len(result.tasks),
                    result.confidence,
                    arms,
                    result.profile_taus,
                    result.profiles or {},
                )
            )
    return tuple(out)


def _heatmaps(
    table: Table, metrics: Sequence[str], baseline: str, absent: dict[str, str]
) -> tuple[Heatmap, ...]:
    if not any(FACTOR_SEPARATOR in arm for arm in table.arms):
        absent["interactions"] = (
            "the audit is not factorial: no arm combines choices (names like "
            f"qk_norm{FACTOR_SEPARATOR}gqa), so there are no interactions to show"
        )
        return ()
    out = []
    for metric in metrics:
        for scale in table.scales:
            result = _attempt(
                lambda m=metric, s=scale: interactions(
                    table, m, JudgeOptions(baseline=baseline, scale=s), separator=FACTOR_SEPARATOR
                ),
                "interactions",
                absent,
            )
            if result is None:
                continue
            out.append(
                Heatmap(
                    metric=result.metric,
                    scale=result.scale,
                    sigma=result.sigma,
                    factors=tuple(result.main_effects),
                    main_sigmas={f: e / result.sigma for f, e in result.main_effects.items()},
                    combinations=tuple(
                        Combination(
                            c.arm,
                            tuple(c.factors),
                            c.observed,
                            c.predicted,
                            c.interaction_sigmas,
                            c.harmful_count,
                        )
                        for c in result.combinations
                    ),
                    harmful=tuple(result.harmful),
                    r2_additive=result.r2_additive,
                    r2_harmful_count=result.r2_harmful_count,
                )
            )
    return tuple(out)


def _power(v: Verdicts) -> PowerCase | None:
    """The family's power as it ran: the sequential loop's (simulated) when the loop judged
    it, else the fixed design's with each tested arm's own seeds; None without a noise floor
    or a tested arm."""
    if v.baseline_n < 2 or v.audit_design is None:
        return None
    design = v.audit_design
    if v.rule is not None:
        curve = sequential_power_curve(design.m, v.rule)
    else:
        curve = _fixed_curve(design, v.power_target)
    return PowerCase(
        metric=v.metric,
        scale=v.scale,
        sigma=v.sigma,
        arm_seeds=tuple(sorted(set(design.arm_seeds))),
        baseline_seeds=v.baseline_n,
        m=v.m,
        curve=curve,
        seeds_for=_seeds_for(max(v.m, 1), v.alpha, v.correction),
    )


# Metrics judged at one scale share their design, so each is computed once per report.
@functools.lru_cache(maxsize=64)
def _fixed_curve(design: AuditDesign, target: float) -> PowerCurve:
    return power_curve([design.arm(n) for n in design.arm_seeds], target)


def _with_power_mde(
    verdicts: Sequence[Verdicts], power: Sequence[PowerCase]
) -> tuple[Verdicts, ...]:
    """Each family's design MDE is its power curve's, so the page states one MDE per design."""
    mde = {(c.metric, c.scale): c.curve.mde_sigmas for c in power}
    return tuple(
        dataclasses.replace(v, design_mde=(mde[key] or math.nan) * v.sigma)
        if (key := (v.metric, v.scale)) in mde
        else v
        for v in verdicts
    )


@functools.lru_cache(maxsize=64)
def _seeds_for(m: int, alpha: float, correction: str) -> tuple[tuple[float, int | None], ...]:
    options = JudgeOptions(alpha=alpha, correction=correction)
    return tuple(
        (x, seeds_needed(x, options, n_arms=m, max_seeds=SEEDS_CAP)) for x in POWER_EFFECTS
    )


# ---------------------------------------------------------------------------------------------
# audit directories: runs, curves, scope, provenance


@dataclass(frozen=True)
class _Run:
    path: Path
    spec: dict[str, Any]
    done: RunRecord | None
    env: dict[str, Any] | None


def _resolve(source: Path) -> tuple[Path | None, Path]:
    """(audit directory or None, results CSV)."""
    if source.is_dir():
        return source, source / RESULTS_FILE
    if source.suffix == ".toml":
        audit_dir = resolve_audit_dir(source)
        return audit_dir, audit_dir / RESULTS_FILE
    if not source.is_file():
        raise DataError(f"{source} does not exist: give an audit directory, file or results CSV")
    return None, source


def _runs(audit_dir: Path) -> tuple[_Run, ...]:
    return tuple(
        _Run(
            path=run_dir,
            spec=store.read_json(run_dir / store.RUN_FILE) or {},
            done=_record(run_dir),
            env=store.read_json(run_dir / ENV),
        )
        for run_dir in store.audit_run_dirs(audit_dir)
    )


def _record(run_dir: Path) -> RunRecord | None:
    """The run's DONE record; a garbled one reads as unfinished (`status` says why)."""
    try:
        return store.read_record(run_dir)
    except DataError:
        return None


def _curve(run: _Run) -> Curve | None:
    rows = _read_metrics(run.path / store.METRICS)
    if not rows:
        return None
    spec = run.spec
    return Curve(
        arm=spec.get("arm", run.path.parts[-3]),
        family=spec.get("family"),
        scale=spec.get("scale", run.path.parts[-2]),
        seed=int(spec.get("seed", 0)),
        steps=tuple(int(r["step"]) for r in rows),
        loss=tuple(_number(r.get("loss")) for r in rows),
        grad_norm=tuple(_number(r.get("grad_norm")) for r in rows),
        diverged_step=run.done.diverged_step if run.done else None,
        val_steps=tuple(int(r["step"]) for r in rows if r.get("val_loss") is not None),
        val_loss=tuple(float(r["val_loss"]) for r in rows if r.get("val_loss") is not None),
    )


def _routing(run: _Run) -> Routing | None:
    at_end = RoutingAtEnd.of_rows(_read_metrics(run.path / store.METRICS))
    if at_end is None:
        return None
    spec = run.spec
    events = _read_metrics(run.path / EVENTS)
    return Routing(
        arm=spec.get("arm", run.path.parts[-3]),
        scale=spec.get("scale", run.path.parts[-2]),
        seed=int(spec.get("seed", 0)),
        step=at_end.step,
        load=at_end.load,
        dropped=at_end.dropped,
        entropy=at_end.entropy,
        collapses=tuple(
            (int(e["step"]), int(e["layer"])) for e in events if e.get("event") == "router_collapse"
        ),
    )


def _read_metrics(path: Path) -> list[dict[str, Any]]:
    """The complete rows of metrics.jsonl; a running trainer's torn last line is left out."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _scope(table: Table | None, runs: Sequence[_Run], audit_dir: Path | None) -> Scope:
    audit = (store.read_json(audit_dir / store.AUDIT_FILE) or {}) if audit_dir else {}
    specs = [run.spec for run in runs if run.spec]
    scales = table.scales if table else tuple(dict.fromkeys(s["scale"] for s in specs))
    out = []
    for scale in scales:
        spec = next((s for s in specs if s.get("scale") == scale), None)
        recipe = spec.get("recipe", {}) if spec else {}
        model = spec.get("model", {}) if spec else {}
        tokens = (
            recipe["steps"] * recipe["batch_tokens"]
            if "steps" in recipe and "batch_tokens" in recipe
            else None
        )
        planned = Counter(s["arm"] for s in specs if s.get("scale") == scale)
        arms = table.arms_at(scale) if table else tuple(planned)
        seeds = sorted({len(table.runs(arm, scale)) if table else planned[arm] for arm in arms})
        out.append(ScaleScope(scale, model, tokens, len(arms), tuple(seeds)))
    shared: dict[str, Any] = next((s.get("recipe", {}) for s in specs if not s.get("tuned")), {})
    tuned = tuple(sorted({s["arm"] for s in specs if s.get("tuned")})) or (
        tuple(a for a in table.arms if table.tuned(a)) if table else ()
    )
    return Scope(tuple(out), shared, audit.get("suite"), tuned, _param_counts(table))


def _param_counts(table: Table | None) -> tuple[tuple[str, str, int, int], ...]:
    """Total and active parameters per arm and scale (active = total for runs from before
    active counts were recorded)."""
    values: dict[tuple[str, str], dict[str, list[float]]] = {}
    for row in table.rows if table else ():
        if row.metric in ("params", "active_params") and math.isfinite(row.value):
            values.setdefault((row.arm, row.scale), {}).setdefault(row.metric, []).append(row.value)
    out = []
    for (arm, scale), counts in values.items():
        total = counts.get("params")
        if total:
            active = counts.get("active_params", total)
            out.append(
                (arm, scale, round(sum(total) / len(total)), round(sum(active) / len(active)))
            )
    return tuple(out)


def _provenance(csv_path: Path, runs: Sequence[_Run], command: str | None) -> Provenance:
    digest = hashlib.sha256(csv_path.read_bytes()).hexdigest() if csv_path.is_file() else None
    hashes = tuple(sorted({r.spec["recipe_hash"] for r in runs if "recipe_hash" in r.spec}))
    envs: list[dict[str, Any]] = []
    for run in runs:
        # torch_threads and cpu_count vary with the worker, not with the result
        env = {k: v for k, v in (run.env or {}).items() if k not in ("torch_threads",)}
        if env and env not in envs:
            envs.append(env)
    return Provenance(str(csv_path), digest, hashes, tuple(envs), command)


def _progress(runs: Sequence[_Run]) -> Progress:
    states = Counter("unfinished" if run.done is None else run.done.status for run in runs)
    finished = len(runs) - states["unfinished"]
    return Progress(finished, len(runs), dict(sorted(states.items())))


def _protocol_notes(audit_dir: Path | None) -> dict[str, tuple[tuple[str | None, str], ...]]:
    audit = (store.read_json(audit_dir / store.AUDIT_FILE) or {}) if audit_dir else {}
    notes: dict[str, list[tuple[str | None, str]]] = {}
    for note in audit.get("notes", []):
        text = f"{note['rule']}: {note['message']}"
        notes.setdefault(note["arm"], []).append((note.get("scale"), text))
    return {arm: tuple(items) for arm, items in notes.items()}


def _title(audit_dir: Path | None, csv_path: Path) -> str:
    if audit_dir is None:
        return csv_path.name
    audit = store.read_json(audit_dir / store.AUDIT_FILE) or {}
    return str(audit.get("name", audit_dir.name))
