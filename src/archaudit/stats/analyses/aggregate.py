"""Aggregate downstream statistics over tasks × seeds, as rliable defines them.

Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical Precipice" (NeurIPS
2021), library `rliable`; the definitions below follow its `metrics.py` and `library.py` so that
the numbers agree. An arm's scores form a (seeds × tasks) matrix: one row per finished seed, one
column per task metric (default: the `<task>/score` of every task that carries signal, the numbers
`downstream_avg` averages; tasks at chance or constant in every run are left out with a note).

- mean: the macro average, the mean over tasks of each task's seed mean;
- IQM: the interquartile mean, the 25 % trimmed mean of all seeds × tasks scores;
- intervals: stratified bootstrap, the seeds resampled with replacement within every task
  (the strata) independently, percentile intervals;
- probability of improvement P(arm > baseline): per task, the Mann–Whitney U of the arm's seeds
  against the baseline's over n_arm·n_baseline (a tie counts one half), averaged over tasks; its
  interval resamples the arm's and the baseline's seeds independently within every task;
- almost stochastic order (`aso.py`) of each seed's macro average against the baseline's.

A single-seed arm has nothing to resample, so its intervals are not estimable (NaN, with a
note), never zero-width. The direction comes from the task names unless the options'
`lower_is_better` is set (lower is better negates the scores). Needs scipy (the `stats` extra).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.errors import ConfigError
from archaudit.metrics import DOWNSTREAM_AVERAGE, PRIMARY_LOSS, lower_is_better
from archaudit.names import ResultStatus
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.inference.aso import (
    ASO_THRESHOLD,
    AlmostStochasticOrder,
    almost_stochastic_order,
)
from archaudit.stats.inference.resample import estimable_interval
from archaudit.stats.inference.samples import sample_arm
from archaudit.stats.judging.family import left_out
from archaudit.stats.judging.signal import check_signal
from archaudit.stats.records.errors import DesignError, TooFewSeedsError
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import Table, TableLike, load_table

TASK_SUFFIX = "/score"
"""Per-task metrics the audit store writes (`<task>/score`); the default strata."""
IQM_CUT = 0.25


PROFILE_POINTS = 41


def performance_profile(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """rliable's score distribution (Agarwal et al. 2021, fig. 5): for each τ the share of all
    seeds × tasks scores above it; (seeds, tasks), (T,) → (T,)."""
    return np.mean(np.ravel(scores)[None, :] > np.asarray(taus)[:, None], axis=1)


def macro_mean(scores: np.ndarray) -> np.ndarray:
    """Mean over tasks of the per-task seed means; (..., seeds, tasks) → (...)."""
    return np.mean(np.mean(scores, axis=-2), axis=-1)


def iqm(scores: np.ndarray) -> np.ndarray:
    """The interquartile mean of all seeds × tasks scores; (..., seeds, tasks) → (...)."""
    from scipy.stats import trim_mean

    flat = np.reshape(scores, (*np.shape(scores)[:-2], -1))
    return trim_mean(flat, IQM_CUT, axis=-1)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) averaged over tasks; x: (..., seeds_x, tasks), y: (..., seeds_y, tasks)."""
    from scipy.stats import mannwhitneyu

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    u = mannwhitneyu(x, y, axis=-2, method="asymptotic").statistic
    return np.mean(u / (x.shape[-2] * y.shape[-2]), axis=-1)


def stratified_resample(scores: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, seeds, tasks) replicates, seeds drawn with replacement within each task."""
    seeds, tasks = scores.shape
    rows = rng.integers(0, seeds, size=(n_boot, seeds, tasks))
    return scores[rows, np.arange(tasks)]


@dataclass(frozen=True)
class ArmAggregate(JsonResult):
    """One arm's aggregates; intervals are NaN when not estimable (a single seed)."""

    arm: str
    n_seeds: int
    mean: float
    mean_interval: tuple[float, float]
    iqm: float
    iqm_interval: tuple[float, float]
    prob_improvement: float
    """P(arm > baseline), averaged over tasks; NaN for the baseline."""
    prob_improvement_interval: tuple[float, float]
    aso_eps_min: float
    """ε_min of the arm over the baseline (small = better); NaN below 2 seeds on either side."""
    aso_eps_min_reverse: float
    """ε_min of the baseline over the arm (small = worse)."""
    aso: str | None
    """"better" or "worse" when ε_min is below the threshold one way, else "undecided"; None
    when not tested (fewer than 2 seeds on either side)."""


@dataclass(frozen=True)
class Aggregates(JsonResult):
    """rliable's aggregates and deep-significance's ASO for every finished arm at one scale."""

    source: str
    scale: str
    baseline: str
    tasks: tuple[str, ...]
    lower_is_better: bool
    confidence: float
    n_boot: int
    seed: int
    aso_threshold: float
    aso_comparisons: int
    arms: tuple[ArmAggregate, ...]
    notes: tuple[str, ...]
    profile_taus: tuple[float, ...] = ()
    """The thresholds τ of the performance profiles (scores, negated for lower-is-better)."""
    profiles: dict[str, tuple[float, ...]] | None = None
    """Arm → its performance profile: the share of its seeds × tasks scores above each τ."""


FALLBACK_METRICS = (DOWNSTREAM_AVERAGE, PRIMARY_LOSS)
"""Aggregated, as one stratum, when the results hold no per-task metrics."""


def _strata(table: Table, metrics: Sequence[str]) -> tuple[tuple[str, ...], list[str]]:
    """The task metrics (by default the `<task>/score` of every task that carries signal in
    this audit, `stats.judging.signal`: tasks at chance in every run would only dilute the
    aggregate), with notes on what was left out; else the first fallback metric the table has."""
    if metrics:
        return tuple(metrics), []
    signal = check_signal(table)
    notes = [
        f"left out, no signal in this audit: {task} ({why})"
        for task, why in signal.uninformative.items()
    ]
    if signal.informative:
        return tuple(task + TASK_SUFFIX for task in signal.informative), notes
    for metric in FALLBACK_METRICS:
        if metric in table.metrics:
            return (metric,), [
                *notes,
                f"no per-task metrics named '<task>{TASK_SUFFIX}' with signal: aggregated over "
                f"{metric} alone (one stratum; name task metrics with --metric)",
            ]
    raise DesignError(
        f"{table.source} (column 'metric')",
        f"no per-task metrics named '<task>{TASK_SUFFIX}' with signal and none of "
        f"{list(FALLBACK_METRICS)}",
        "name the task metrics with --metric (repeatable)",
    )


def aggregate(
    table: TableLike,
    options: JudgeOptions = DEFAULT,
    *,
    metrics: Sequence[str] = (),
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    aso_threshold: float = ASO_THRESHOLD,
) -> Aggregates:
    """IQM, macro mean, P(arm > baseline) and ASO over the task `metrics` at one scale.

    `options` names the baseline, the scale, the direction and the arms (`arms`, `exclude`).
    """
    table = load_table(table)
    tasks, strata_notes = _strata(table, metrics)
    for metric in tasks:
        table.check_metric(metric)
    scale = table.resolve_scale(options.scale)
    table.check_arm(options.baseline, "baseline")
    lower = _direction(tasks, options.lower_is_better)
    scores, left = _scores(table, tasks, scale, options, -1.0 if lower else 1.0)
    arms, arm_notes = _arm_aggregates(
        scores, options.baseline, n_boot, seed, confidence, aso_threshold
    )
    single = [a.arm for a in arms if a.n_seeds < 2]
    notes = [*strata_notes, *left, *arm_notes]
    if single:
        notes.append(
            "intervals not estimable for single-seed arms (no seeds to resample): "
            + ", ".join(single)
        )
    taus, profiles = _profiles(scores)
    return Aggregates(
        source=table.source,
        scale=scale,
        baseline=options.baseline,
        tasks=tasks,
        lower_is_better=lower,
        confidence=confidence,
        n_boot=n_boot,
        seed=seed,
        aso_threshold=aso_threshold,
        aso_comparisons=sum(a.aso is not None for a in arms),
        arms=tuple(arms),
        notes=tuple(notes),
        profile_taus=taus,
        profiles=profiles,
    )


def _scores(
    table: Table, tasks: Sequence[str], scale: str, options: JudgeOptions, sign: float
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Each finished arm's (seeds × tasks) scores, signed so that higher is better, and a note
    for every arm left out because a seed did not finish every task."""
    excluded = left_out(table, options)
    scores, notes = {}, []
    for arm in table.arms_at(scale):
        if arm in excluded:
            continue
        samples = [sample_arm(table, metric, scale, arm) for metric in tasks]
        status = next((s.status for s in samples if s.status != ResultStatus.OK), ResultStatus.OK)
        if status == ResultStatus.OK:
            scores[arm] = sign * np.column_stack([s.values for s in samples])
        else:
            notes.append(f"{arm} left out: {status}")
    if options.baseline not in scores:
        raise TooFewSeedsError(
            table.source,
            f"baseline {options.baseline!r} has no finished seed with every task at scale "
            f"{scale!r}",
            "run it to the end, or name the task metrics it has with --metric",
        )
    return scores, notes


def _arm_aggregates(
    scores: dict[str, np.ndarray],
    baseline: str,
    n_boot: int,
    seed: int,
    confidence: float,
    aso_threshold: float,
) -> tuple[list[ArmAggregate], list[str]]:
    """Every arm's aggregates against the baseline, and the notes on its intervals.

    ASO runs only where both sides have two or more seeds, Bonferroni over those arms.
    """
    rng = np.random.default_rng(seed)
    base = scores[baseline]
    aso_arms = [a for a in scores if a != baseline and len(scores[a]) > 1 and len(base) > 1]
    arms, notes = [], []
    for arm, values in scores.items():
        order = (
            almost_stochastic_order(
                values.mean(axis=1),
                base.mean(axis=1),
                confidence=confidence,
                comparisons=len(aso_arms),
                seed=seed,
            )
            if arm in aso_arms
            else None
        )
        summary, arm_notes = _summarize(
            arm, values, None if arm == baseline else base, n_boot, rng, confidence
        )
        notes += arm_notes
        arms.append(
            ArmAggregate(
                **summary,
                aso_eps_min=order.eps_min if order else math.nan,
                aso_eps_min_reverse=order.eps_min_reverse if order else math.nan,
                aso=_aso_call(order, aso_threshold),
            )
        )
    return arms, notes


def _profiles(
    scores: dict[str, np.ndarray],
) -> tuple[tuple[float, ...], dict[str, tuple[float, ...]]]:
    """The thresholds τ, spread over every score, and each arm's performance profile on them."""
    everything = np.concatenate([v.ravel() for v in scores.values()])
    taus = np.linspace(everything.min(), everything.max(), PROFILE_POINTS)
    profiles = {arm: tuple(map(float, performance_profile(v, taus))) for arm, v in scores.items()}
    return tuple(float(t) for t in taus), profiles


def _direction(tasks: Sequence[str], given: bool | None) -> bool:
    """One direction for every task: as given, else the registry's, which must agree."""
    lower = {lower_is_better(task, given) for task in tasks}
    if len(lower) > 1:
        raise ConfigError(
            f"tasks {list(tasks)} mix losses and scores: pass lower_is_better "
            "(--lower-is-better/--higher-is-better) or name tasks of one direction"
        )
    return lower.pop()


def _summarize(
    arm: str,
    values: np.ndarray,
    base: np.ndarray | None,
    n_boot: int,
    rng: np.random.Generator,
    confidence: float,
) -> tuple[dict, list[str]]:
    """Point estimates and stratified-bootstrap intervals of one arm (`base` None for the
    baseline itself), with a note for every interval that is not estimable."""
    boot = stratified_resample(values, n_boot, rng) if len(values) > 1 else None
    # rliable's StratifiedIndependentBootstrap: the baseline is resampled on its own.
    base_boot = (
        stratified_resample(base, n_boot, rng) if base is not None and len(base) > 1 else None
    )
    replicates = {
        "mean": macro_mean(boot) if boot is not None else None,
        "IQM": iqm(boot) if boot is not None else None,
        "P(arm > baseline)": probability_of_improvement(boot, base_boot)
        if boot is not None and base_boot is not None
        else None,
    }
    intervals = {name: _interval(r, confidence) for name, r in replicates.items()}
    notes = [
        f"{arm}: {name} interval not estimable, all {n_boot} bootstrap replicates gave "
        f"{float(np.ravel(r)[0]):.3g}"
        for name, r in replicates.items()
        if r is not None and math.isnan(intervals[name][0])
    ]
    summary = dict(
        arm=arm,
        n_seeds=len(values),
        mean=float(macro_mean(values)),
        mean_interval=intervals["mean"],
        iqm=float(iqm(values)),
        iqm_interval=intervals["IQM"],
        prob_improvement=float(probability_of_improvement(values, base))
        if base is not None
        else math.nan,
        prob_improvement_interval=intervals["P(arm > baseline)"],
    )
    return summary, notes


def _interval(replicates: np.ndarray | None, confidence: float) -> tuple[float, float]:
    if replicates is None:
        return math.nan, math.nan
    return estimable_interval(np.asarray(replicates, dtype=float), confidence)


def _aso_call(order: AlmostStochasticOrder | None, threshold: float) -> str | None:
    if order is None:
        return None
    if order.eps_min < threshold:
        return "better"
    if order.eps_min_reverse < threshold:
        return "worse"
    return "undecided"
