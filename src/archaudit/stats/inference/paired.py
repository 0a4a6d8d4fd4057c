"""Item-level uncertainty: Wilson intervals, McNemar, the paired bootstrap, and the split of a
difference's uncertainty into item sampling and seed variation (docs/protocol.md, Statistics);
for the continuous per-item measures (bpb, margin), a paired t-test and a Wilcoxon signed-rank
test on the seed-averaged per-item differences."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from archaudit.errors import did_you_mean
from archaudit.metrics import metric_info
from archaudit.stats.inference.items import ITEM_MEASURES, ItemKey, ItemTable, load_items
from archaudit.stats.inference.resample import bootstrap_means, percentile_interval
from archaudit.stats.records.errors import DesignError, UnknownNameError, check_name
from archaudit.stats.records.serialize import JsonResult


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (scipy's); never zero-width at 0 or n."""
    if n <= 0:
        raise ValueError("a Wilson interval needs n >= 1")
    ci = scipy_stats.binomtest(successes, n).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class McNemar(JsonResult):
    """Exact McNemar test on paired binary outcomes (a binomial test on the discordant pairs)."""

    only_a: int
    """Items `a` got right and `b` got wrong."""
    only_b: int
    p: float


def mcnemar(a: np.ndarray, b: np.ndarray) -> McNemar:
    """Two-sided exact McNemar: scipy's binomial test on the discordant pairs, X ~ Bin(n, 1/2)."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    n = only_a + only_b
    p = float(scipy_stats.binomtest(only_a, n, 0.5).pvalue) if n else 1.0
    return McNemar(only_a=only_a, only_b=only_b, p=p)


@dataclass(frozen=True)
class PairedBootstrap(JsonResult):
    """Mean of a − b over items, with a percentile interval from resampling items together."""

    difference: float
    low: float
    high: float
    se: float
    """Bootstrap standard error: the item-sampling uncertainty of the difference."""
    p: float
    """Two-sided bootstrap p-value for "no difference"."""
    n_items: int
    n_boot: int
    seed: int


def paired_bootstrap(
    a: np.ndarray, b: np.ndarray, *, n_boot: int = 2000, seed: int = 0, confidence: float = 0.95
) -> PairedBootstrap:
    """Resample items (the same items for both sides) to get the difference's uncertainty."""
    differences = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    means = bootstrap_means(differences, n_boot, np.random.default_rng(seed))
    low, high = percentile_interval(means, confidence)
    # Share of resamples on the far side of zero, doubled; +1 so that p is never exactly 0.
    beyond = min(np.sum(means <= 0.0), np.sum(means >= 0.0))
    return PairedBootstrap(
        difference=float(differences.mean()),
        low=low,
        high=high,
        se=float(np.std(means, ddof=1)),
        p=min(1.0, 2.0 * float(beyond + 1) / (n_boot + 1)),
        n_items=len(differences),
        n_boot=n_boot,
        seed=seed,
    )


@dataclass(frozen=True)
class RunAccuracy(JsonResult):
    """One run's accuracy on the paired items, with its Wilson interval."""

    seed: int
    correct: int
    n_items: int
    accuracy: float
    low: float
    high: float


@dataclass(frozen=True)
class ItemComparison(JsonResult):
    """An arm against the baseline on the same items, uncertainty split by source."""

    arm: str
    baseline: str
    scale: str
    task: str | None
    n_items: int
    arm_runs: tuple[RunAccuracy, ...]
    baseline_runs: tuple[RunAccuracy, ...]
    difference: PairedBootstrap
    """Seed-averaged accuracy of the arm minus the baseline's, bootstrapped over items."""
    se_items: float
    """Uncertainty of the difference from the finite benchmark (items resampled)."""
    se_seeds: float
    """Uncertainty of the difference from seed variation: √(s_a²/n_a + s_b²/n_b); NaN with one
    seed on either side."""
    mcnemar: tuple[McNemar, ...]
    """One exact McNemar test per pair of runs, paired by seed order."""


def compare_items(
    items: ItemTable | Any,
    arm: str,
    baseline: str,
    scale: str,
    *,
    task: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> ItemComparison:
    """Paired comparison of `arm` with `baseline` on the items every run of both answered.
    `items` is an `ItemTable`, an items CSV/Parquet file, an audit directory or a DataFrame."""
    items = load_items(items)
    _check_arms(items, arm, baseline, scale)
    arm_answers = items.answers(arm, scale, task)
    base_answers = items.answers(baseline, scale, task)
    common = _shared_items(
        items.source,
        [*arm_answers.values(), *base_answers.values()],
        f"arms {arm!r} and {baseline!r} share no items at scale {scale!r}" + _in_task(task),
        "paired tests need both arms evaluated on the same items",
    )
    arm_matrix = _run_matrix(arm_answers, common)
    base_matrix = _run_matrix(base_answers, common)
    difference = paired_bootstrap(
        arm_matrix.mean(axis=0),
        base_matrix.mean(axis=0),
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
    )
    return ItemComparison(
        arm=arm,
        baseline=baseline,
        scale=scale,
        task=task,
        n_items=len(common),
        arm_runs=_run_accuracies(arm_answers, arm_matrix, confidence),
        baseline_runs=_run_accuracies(base_answers, base_matrix, confidence),
        difference=difference,
        se_items=difference.se,
        se_seeds=_seed_se(arm_matrix.mean(axis=1), base_matrix.mean(axis=1)),
        mcnemar=tuple(mcnemar(a, b) for a, b in zip(arm_matrix, base_matrix, strict=False)),
    )


def _run_matrix(
    answers: dict[int, dict[ItemKey, bool]] | dict[int, dict[ItemKey, float]], items: list[ItemKey]
) -> np.ndarray:
    """(runs, items) matrix of 0/1 answers or of a measure, runs in seed order."""
    return np.array([[run[item] for item in items] for run in answers.values()], dtype=float)


def _run_accuracies(
    answers: dict[int, dict[ItemKey, bool]], matrix: np.ndarray, confidence: float
) -> tuple[RunAccuracy, ...]:
    n = matrix.shape[1]
    accuracies = []
    for seed, row in zip(answers, matrix, strict=True):
        correct = int(row.sum())
        low, high = wilson_interval(correct, n, confidence)
        accuracies.append(
            RunAccuracy(
                seed=seed, correct=correct, n_items=n, accuracy=correct / n, low=low, high=high
            )
        )
    return tuple(accuracies)


def _seed_se(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2 or len(b) < 2:
        return math.nan
    return math.sqrt(float(np.var(a, ddof=1)) / len(a) + float(np.var(b, ddof=1)) / len(b))


@dataclass(frozen=True)
class PairedTest(JsonResult):
    """A paired test on per-item differences (a − b)."""

    statistic: float
    p: float


@dataclass(frozen=True)
class MeasureComparison(JsonResult):
    """An arm against the baseline on a continuous per-item measure, items paired."""

    arm: str
    baseline: str
    scale: str
    task: str | None
    measure: str
    higher_is_better: bool
    n_items: int
    """Items every run of both arms has the measure for (cloze items have no margin)."""
    arm_mean: float
    baseline_mean: float
    difference: PairedBootstrap
    """Δ, bootstrapped over items: the seed-averaged measure of the arm minus the baseline's,
    signed like every Δ so that > 0 means the arm is better (baseline − arm for bpb)."""
    t_test: PairedTest
    """scipy's `ttest_rel` on the seed-averaged per-item values, two-sided, signed like Δ."""
    wilcoxon: PairedTest
    """scipy's `wilcoxon` signed-rank test on the same differences, two-sided."""
    se_items: float
    se_seeds: float


def compare_item_measure(
    items: ItemTable | Any,
    arm: str,
    baseline: str,
    scale: str,
    measure: str,
    *,
    task: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> MeasureComparison:
    """Paired comparison of `arm` with `baseline` on `measure` ("bpb" or "margin"), each item's
    value averaged over each arm's seeds, on the items every run of both has the measure for."""
    items = load_items(items)
    if measure not in ITEM_MEASURES:
        raise UnknownNameError(
            "measure",
            f"{measure!r} is not a continuous item measure",
            f"pass one of {', '.join(ITEM_MEASURES)}" + did_you_mean(measure, ITEM_MEASURES),
        )
    _check_arms(items, arm, baseline, scale)
    arm_values = items.values(arm, scale, measure, task)
    base_values = items.values(baseline, scale, measure, task)
    common = _shared_items(
        items.source,
        [*arm_values.values(), *base_values.values()],
        f"arms {arm!r} and {baseline!r} share no items with a {measure} at scale {scale!r}"
        + _in_task(task),
        "paired tests need both arms measured on the same items (cloze items have no margin)",
    )
    arm_matrix = _run_matrix(arm_values, common)
    base_matrix = _run_matrix(base_values, common)
    a, b = arm_matrix.mean(axis=0), base_matrix.mean(axis=0)
    higher = metric_info(f"{task}/{measure}").higher_is_better  # fewer bits, a wider margin
    better, worse = (a, b) if higher else (b, a)  # Δ > 0 means better, as everywhere
    difference = paired_bootstrap(better, worse, n_boot=n_boot, seed=seed, confidence=confidence)
    return MeasureComparison(
        arm=arm,
        baseline=baseline,
        scale=scale,
        task=task,
        measure=measure,
        higher_is_better=higher,
        n_items=len(common),
        arm_mean=float(a.mean()),
        baseline_mean=float(b.mean()),
        difference=difference,
        t_test=paired_t_test(better, worse),
        wilcoxon=signed_rank_test(better, worse),
        se_items=difference.se,
        se_seeds=_seed_se(arm_matrix.mean(axis=1), base_matrix.mean(axis=1)),
    )


def paired_t_test(a: np.ndarray, b: np.ndarray) -> PairedTest:
    """Two-sided paired t-test; p = 1 when every difference is the same (no spread to test)."""
    differences = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(differences) < 2 or np.ptp(differences) == 0.0:
        return PairedTest(statistic=math.nan, p=1.0 if not differences.any() else math.nan)
    result = scipy_stats.ttest_rel(a, b)
    return PairedTest(statistic=float(result.statistic), p=float(result.pvalue))


def signed_rank_test(a: np.ndarray, b: np.ndarray) -> PairedTest:
    """Two-sided Wilcoxon signed-rank test (zero differences dropped); p = 1 when all are 0."""
    differences = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if not differences.any():
        return PairedTest(statistic=0.0, p=1.0)
    result = scipy_stats.wilcoxon(a, b)
    return PairedTest(statistic=float(result.statistic), p=float(result.pvalue))


def _check_arms(items: ItemTable, arm: str, baseline: str, scale: str) -> None:
    """Both arms exist, and both have runs at `scale` (an arm labelled with another scale
    would otherwise be compared as an empty matrix)."""
    for role, name in (("arm", arm), ("baseline", baseline)):
        check_name(items.source, "arm", role, name, items.arms)
        if not items.values(name, scale, "correct"):
            scales = sorted({r.scale for r in items.results if r.arm == name})
            raise DesignError(
                items.source,
                f"arms {arm!r} and {baseline!r} share no items at scale {scale!r}: the {role} "
                f"has no runs there (its scales: {', '.join(scales)})",
                "judge a scale that both arms were run at",
            )


def _in_task(task: str | None) -> str:
    return f" in task {task!r}" if task else ""


def _shared_items(
    source: str,
    runs: list[dict[ItemKey, bool]] | list[dict[ItemKey, float]],
    problem: str,
    fix: str,
) -> list[ItemKey]:
    """Items every run has a value for (a 0/1 answer, or a finite measure), in (task, item)
    order; a `DesignError` saying `problem` and `fix` when there are none."""
    common = set.intersection(*(set(run) for run in runs)) if runs else set()
    shared = sorted(key for key in common if all(not math.isnan(run[key]) for run in runs))
    if not shared:
        raise DesignError(source, problem, fix)
    return shared
