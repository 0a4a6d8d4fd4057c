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
from archaudit.audit.ladder import target_prediction
from archaudit.audit.loop_summary import read_loop_summary
from archaudit.audit.record import RoutingAtEnd, RunRecord
from archaudit.audit.spec import resolve_audit_dir
from archaudit.audit.stress import STRESS_DIR
from archaudit.audit.stress_result import RESULT_FILE, StressResult, read_result
from archaudit.audit.verdicts import judge_family
from archaudit.errors import ArchauditError, DataError
from archaudit.metrics import lower_is_better
from archaudit.names import BASELINE
from archaudit.report.palette import Colour, arm_colours
from archaudit.rundir import ENV, EVENTS, is_audit_dir
from archaudit.stats import (
    AuditDesign,
    cross_scale_transfer,
    interactions,
    load_table,
    seeds_needed,
)
from archaudit.stats.analyses.aggregate import TASK_SUFFIX, aggregate
from archaudit.stats.analyses.decoupling import Side, decoupled_kind, relative_change
from archaudit.stats.analyses.snr import SignalToNoise, signal_to_noise
from archaudit.stats.errors import EmptyTableError
from archaudit.stats.inference.family_test import ROBUST
from archaudit.stats.judgement import SEQUENTIAL, ArmVerdict, Judgement
from archaudit.stats.options import JudgeOptions
from archaudit.stats.predictions.predict import Prediction, with_prediction
from archaudit.stats.simulation.power import PowerCurve, power_curve
from archaudit.stats.simulation.sequential import (
    sequential_power_curve,
)
from archaudit.stats.table import RESULTS_FILE, Table

DOWNSTREAM_METRIC = "downstream_avg"
PRIMARY_METRICS = ("val_loss", DOWNSTREAM_METRIC)
"""Judged by default when present: the audit's loss and its downstream macro average."""
POWER_EFFECTS = (3.0, 5.0, 10.0)
"""Effects (in σ) for which the power section says how many seeds a claim would need."""
FACTOR_SEPARATOR = "+"

T = TypeVar("T")


@dataclass(frozen=True)
class ScatterPoint:
    arm: str
    family: str | None
    loss_change: float
    downstream_delta: float
    decoupled: bool
    kind: str | None
    loss: str
    """The loss side: moved, flat, not shown flat or flat not testable (stats.decoupling)."""
    downstream: str


@dataclass(frozen=True)
class Scatter:
    """Loss change against downstream Δ at one scale, read from the verdicts the answer shows
    (stats.decoupling's rule applied to them)."""

    scale: str
    loss_metric: str
    downstream_metric: str
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
    notes: tuple[str, ...] = ()
    """stats.aggregate's notes: the tasks left out (no signal), arms left out, and so on."""


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
    """sha256 of the results file (an audit's: of the DONE records' results.csv text)."""
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
    verdicts: tuple[Judgement, ...]
    """Every family's one verdict record, fixed or sequential (`judge_family`): the numbers
    `archaudit stats` prints for the same metric and scale."""
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
    """Seed σ, spread and SNR per metric (`archaudit.stats.analyses.snr`)."""
    prediction: Prediction | None = None
    """Each arm at the audit's untrained [target] scale (`archaudit.stats.predictions.predict`)."""
    stress: StressResult | None = None
    """The audit's stress test (`archaudit stress`), when it has one."""


SEEDS_CAP = 100


def gather(
    source: str | Path,
    *,
    metrics: Sequence[str] = (),
    baseline: str = BASELINE,
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
    verdicts = _verdicts(table, chosen, baseline, absent, audit_dir) if table else ()
    prediction = (
        _attempt(
            lambda: target_prediction(Path(source), audit_dir, table, chosen, baseline),
            "target",
            absent,
        )
        if table
        else None
    )
    if prediction is not None:
        verdicts = tuple(with_prediction(v, prediction) for v in verdicts)
    power = tuple(case for v in verdicts if (case := _power(v)) is not None)
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
        scatters=_scatters(verdicts, table, chosen, absent) if table else (),
        bumps=_bumps(table, chosen, baseline, absent) if table else (),
        heatmaps=_heatmaps(table, chosen, baseline, absent) if table else (),
        aggregates=_aggregates(table, baseline, absent) if table else (),
        power=power,
        curves=curves,
        scope=_scope(table, runs, audit_dir),
        provenance=_provenance(csv_path, table, runs, command),
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
        prediction=prediction,
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
    """The results table: an audit's from its runs' DONE records, a CSV's (or a folder's
    results.csv) as it is. A running audit may have no finished run yet: then the report is
    partial. A CSV the user named must be readable: its errors stop the report."""
    try:
        if audit_dir is not None and is_audit_dir(audit_dir):
            return store.read_results(audit_dir)
        return load_table(csv_path)
    except EmptyTableError as err:
        if audit_dir is None:
            raise
        absent["table"] = str(err)
        return None


def _choose_metrics(table: Table, metrics: Sequence[str]) -> tuple[str, ...]:
    for metric in metrics:
        table.check_metric(metric)
    if metrics:
        return tuple(metrics)
    primary = tuple(m for m in PRIMARY_METRICS if m in table.metrics)
    return primary or table.metrics


def _verdicts(
    table: Table,
    metrics: Sequence[str],
    baseline: str,
    absent: dict[str, str],
    audit_dir: Path | None,
) -> tuple[Judgement, ...]:
    """Every family judged as `archaudit stats` judges it (the default tests: one recipe does
    not make the arms' seed variances equal, docs/verdicts.md); a family the sequential loop
    judged is the loop's judgement: fixed-design p-values would ignore its looks."""
    loop = read_loop_summary(audit_dir) if audit_dir else None
    out = []
    for metric in metrics:
        for scale in table.scales:
            judgement = _attempt(
                lambda m=metric, s=scale: judge_family(
                    audit_dir, table, m, JudgeOptions(baseline=baseline, scale=s), loop
                ),
                f"verdicts:{metric}:{scale}",
                absent,
            )
            if judgement is not None:
                out.append(judgement)
    return tuple(out)


def _finite_interval(value: Sequence[float] | None) -> tuple[float, float] | None:
    if value is None or not all(math.isfinite(v) for v in value):
        return None
    return (float(value[0]), float(value[1]))


def _loss_and_downstream(metrics: Sequence[str]) -> tuple[str | None, str | None]:
    loss = next((m for m in metrics if lower_is_better(m)), None)
    downstream = next((m for m in metrics if not lower_is_better(m)), None)
    return loss, downstream


def _scatters(
    verdicts: Sequence[Judgement], table: Table, metrics: Sequence[str], absent: dict[str, str]
) -> tuple[Scatter, ...]:
    """Decoupling per scale from the judged families the answer section shows (the loop's,
    for a sequential audit), so that a claim such as "downstream flat, loss moved" is theirs."""
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
    judged = {(v.metric, v.scale): v for v in verdicts}
    out = []
    for scale in table.scales:
        pair = judged.get((loss, scale)), judged.get((downstream, scale))
        if pair[0] is not None and pair[1] is not None:
            points = _points(pair[0], pair[1])
            if points:
                out.append(Scatter(scale, loss, downstream, points))
    return tuple(out)


def _points(loss: Judgement, downstream: Judgement) -> tuple[ScatterPoint, ...]:
    losses = {a.arm: a for a in loss.arms if math.isfinite(a.delta)}
    out = []
    for arm in downstream.arms:
        if arm.arm not in losses or not math.isfinite(arm.delta):
            continue
        sides = _side(losses[arm.arm], loss), _side(arm, downstream)
        kind = decoupled_kind(*sides)
        change = relative_change(losses[arm.arm].mean, loss.baseline_mean)
        out.append(
            ScatterPoint(
                arm=arm.arm,
                family=arm.family,
                loss_change=change,
                downstream_delta=arm.delta,
                decoupled=kind is not None,
                kind=kind,
                loss=sides[0].status,
                downstream=sides[1].status,
            )
        )
    return tuple(out)


def _side(row: ArmVerdict, family: Judgement) -> Side:
    """One arm on one metric as the page shows it; one seed without its own spread (the robust
    test, the loop's 6σ bound) is never flat."""
    return Side(
        verdict=row.verdict,
        interval=_finite_interval(row.interval),
        margin=row.mde,
        baseline=family.baseline_mean,
        single_seed_robust=row.n_seeds < 2 and row.test in (ROBUST, SEQUENTIAL),
    )


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
                    result.notes,
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


def _power(v: Judgement) -> PowerCase | None:
    """The family's power as it ran: the sequential loop's (simulated) when the loop judged
    it, else the fixed design's with each tested arm's own seeds; None without a noise floor
    or a tested arm."""
    if v.baseline_n < 2:
        return None
    if v.sequential is not None and v.sequential.design is not None:
        arms = v.sequential.design.arms
        curve = sequential_power_curve(arms, v.sequential.rule)
        seeds = tuple(sorted({a.n_seeds for a in v.arms if a.stopped is not None}))
    elif v.design is not None:
        arms, seeds = v.m, tuple(sorted(set(v.design.design.arm_seeds)))
        curve = _fixed_curve(v.design.design, v.power_target, v.design.level)
    else:
        return None
    return PowerCase(
        metric=v.metric,
        scale=v.scale,
        sigma=v.sigma,
        arm_seeds=seeds,
        baseline_seeds=v.baseline_n,
        m=arms,
        curve=curve,
        seeds_for=_seeds_for(max(arms, 1), v.alpha, v.correction),
    )


# Metrics judged at one scale share their design, so each is computed once per report.
@functools.lru_cache(maxsize=64)
def _fixed_curve(design: AuditDesign, target: float, level: float) -> PowerCurve:
    """The power at the design's calibrated level α′, as its verdicts and MDE are held to."""
    return power_curve([design.arm(n, level) for n in design.arm_seeds], target)


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


def _provenance(
    csv_path: Path, table: Table | None, runs: Sequence[_Run], command: str | None
) -> Provenance:
    digest = _digest(csv_path, table)
    hashes = tuple(sorted({r.spec["recipe_hash"] for r in runs if "recipe_hash" in r.spec}))
    envs: list[dict[str, Any]] = []
    for run in runs:
        # torch_threads and cpu_count vary with the worker, not with the result
        env = {k: v for k, v in (run.env or {}).items() if k not in ("torch_threads",)}
        if env and env not in envs:
            envs.append(env)
    return Provenance(str(csv_path), digest, hashes, tuple(envs), command)


def _digest(csv_path: Path, table: Table | None) -> str | None:
    """sha256 of the results file: the CSV the table was read from, or for an audit read from
    its DONE records the text its results.csv export holds."""
    if table is not None and table.source != str(csv_path):
        return hashlib.sha256(table.to_csv().encode()).hexdigest()
    return hashlib.sha256(csv_path.read_bytes()).hexdigest() if csv_path.is_file() else None


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
