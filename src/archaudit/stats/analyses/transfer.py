"""Cross-scale transfer: does an arm's effect at a small scale predict it at a larger one?

docs/protocol.md, Cross-scale transfer: sign preservation of Δ, Spearman ρ and Kendall τ of the arm
ranking with their intervals, the rank-shift table, and the arms that diverged only at the
larger scale.

The intervals are for the rank correlation of the arms' true effects. A bootstrap of ρ̂ cannot
give them: noise only ever shuffles a ranking, so ρ̂ and its resamples sit below a true ρ of 1
(such intervals held a perfect transfer's ρ in 0% of audits). Instead, each arm's mean at each
scale gets a simultaneous interval, mean ± q·σ̂/√n with the scale's noise floor σ̂ and its t
quantile, Bonferroni over the 2k intervals, so all of them hold the true means with probability
>= `confidence`. Whenever they do, the true ranking at each scale is one that the intervals
allow, and ρ and τ lie between their smallest and largest values over those rankings
(`ranking.spearman_bounds`, `ranking.kendall_bounds`): a conservative interval with at least the
stated coverage. Arms whose intervals overlap can be ranked either way; when nothing is fixed
(the interval is all of [−1, 1]) the correlation is reported as not estimable (NaN, with a note).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit

from archaudit.errors import ConfigError
from archaudit.stats.analyses.ranking import (
    interval_order,
    kendall_bounds,
    kendall_tau_b,
    rank_ranges,
    rankdata,
    spearman,
    spearman_bounds,
)
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.judging.judgement import ArmVerdict, Judgement, collect_family, judge
from archaudit.stats.records.errors import DesignError
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import Table, TableLike, load_table
from archaudit.stats.records.verdicts import DIVERGED, INCOMPLETE, Verdict

LOW_RHO = 0.5
"""Below this Spearman ρ the report says the small-scale ranking does not carry over."""


@dataclass(frozen=True)
class ArmTransfer(JsonResult):
    """One arm at both scales; rank 1 is the best arm."""

    arm: str
    delta_small: float
    delta_large: float
    sign_preserved: bool
    rank_small: float
    rank_large: float
    rank_shift: float
    """rank_large − rank_small: positive means the arm fell behind at the larger scale."""
    rank_small_range: tuple[int, int]
    """(best, worst) rank the simultaneous intervals allow at the small scale."""
    rank_large_range: tuple[int, int]
    verdict_small: Verdict
    verdict_large: Verdict


@dataclass(frozen=True)
class ScaleTransfer(JsonResult):
    """How well the arm ranking at `small` carries to `large`."""

    metric: str
    baseline: str
    small: str
    large: str
    n_arms: int
    sign_preserved: float
    """Share of arms whose Δ keeps its sign."""
    spearman: float
    spearman_interval: tuple[float, float]
    """Holds the true effects' ρ with probability >= `confidence`; NaN when not estimable."""
    kendall: float
    kendall_interval: tuple[float, float]
    confidence: float
    arms: tuple[ArmTransfer, ...]
    diverged_only_at_large: tuple[str, ...]
    notes: tuple[str, ...]


def cross_scale_transfer(
    table: TableLike,
    metric: str,
    options: JudgeOptions = DEFAULT,
    *,
    small: str | None = None,
    large: str | None = None,
    confidence: float = 0.95,
) -> ScaleTransfer:
    """Compare the arms' effects at two scales (default: the smallest and the largest).

    `options` judges the family at each of the two scales, so its `scale` must be unset.
    """
    table = load_table(table)
    if options.scale is not None:
        raise ConfigError(
            f"cross-scale transfer compares two scales, not scale {options.scale!r}: "
            "name them with small and large (--from, --to)"
        )
    small, large = two_scales(table, small, large)
    judged = [judge(table, metric, options.but(scale=s)) for s in (small, large)]
    return transfer_between(table, judged[0], judged[1], confidence)


def transfer_between(
    table: Table, small: Judgement, large: Judgement, confidence: float = 0.95
) -> ScaleTransfer:
    """The transfer of one family's effects from the judgement at a smaller scale to the one at
    a larger scale (as `findings` judged them: its verdicts are theirs)."""
    scales = small.scale, large.scale
    verdicts = {j.scale: {v.arm: v for v in j.arms} for j in (small, large)}
    names = _finished_at_both(table.source, verdicts, *scales)
    deltas = {s: np.array([verdicts[s][arm].delta for arm in names]) for s in scales}
    level = (1.0 - confidence) / (2 * len(names))  # Bonferroni over both scales' intervals
    orders = {j.scale: _order(table, j, names, level) for j in (small, large)}
    rho = spearman(deltas[small.scale], deltas[large.scale])
    rho_interval = _estimable(spearman_bounds(orders[small.scale], orders[large.scale]))
    arms = _arm_rows(names, deltas, orders, verdicts, scales)
    return ScaleTransfer(
        metric=small.metric,
        baseline=small.baseline,
        small=small.scale,
        large=large.scale,
        n_arms=len(names),
        sign_preserved=float(np.mean([arm.sign_preserved for arm in arms])),
        spearman=rho,
        spearman_interval=rho_interval,
        kendall=kendall_tau_b(deltas[small.scale], deltas[large.scale]),
        kendall_interval=_estimable(kendall_bounds(orders[small.scale], orders[large.scale])),
        confidence=confidence,
        arms=arms,
        diverged_only_at_large=_diverged_only_at_large(small, large),
        notes=tuple(_notes(rho, rho_interval, *scales, confidence)),
    )


def two_scales(table: Table, small: str | None, large: str | None) -> tuple[str, str]:
    """The scales to compare: as given, else the table's smallest and largest."""
    if len(table.scales) < 2:
        raise DesignError(
            f"{table.source} (column 'scale')",
            f"transfer needs two scales, the table has {len(table.scales)}",
            "train the arms at a second scale",
        )
    small = table.resolve_scale(small or table.scales[0])
    return small, table.resolve_scale(large or table.scales[-1])


def _finished_at_both(
    source: str, verdicts: dict[str, dict[str, ArmVerdict]], small: str, large: str
) -> list[str]:
    """The arms judged at both scales that neither diverged nor stayed incomplete (>= 3)."""
    names = [
        arm
        for arm in verdicts[small]
        if arm in verdicts[large]
        and all(verdicts[s][arm].verdict not in (DIVERGED, INCOMPLETE) for s in (small, large))
    ]
    if len(names) < 3:
        raise DesignError(
            source,
            f"only {len(names)} arms finished at both {small!r} and {large!r}",
            "rank correlations need at least 3",
        )
    return names


def _arm_rows(
    names: list[str],
    deltas: dict[str, np.ndarray],
    orders: dict[str, np.ndarray],
    verdicts: dict[str, dict[str, ArmVerdict]],
    scales: tuple[str, str],
) -> tuple[ArmTransfer, ...]:
    """Each arm's Δ, rank (1 = best) and possible ranks at both scales."""
    small, large = scales
    ranks = {s: rankdata(-deltas[s]) for s in scales}
    ranges = {s: rank_ranges(orders[s]) for s in scales}
    return tuple(
        ArmTransfer(
            arm=arm,
            delta_small=float(deltas[small][i]),
            delta_large=float(deltas[large][i]),
            sign_preserved=bool(np.sign(deltas[small][i]) == np.sign(deltas[large][i])),
            rank_small=float(ranks[small][i]),
            rank_large=float(ranks[large][i]),
            rank_shift=float(ranks[large][i] - ranks[small][i]),
            rank_small_range=(int(ranges[small][0][i]), int(ranges[small][1][i])),
            rank_large_range=(int(ranges[large][0][i]), int(ranges[large][1][i])),
            verdict_small=verdicts[small][arm].verdict,
            verdict_large=verdicts[large][arm].verdict,
        )
        for i, arm in enumerate(names)
    )


def _order(table: Table, judged: Judgement, names: list[str], level: float) -> np.ndarray:
    """The order of the arms' true means that their simultaneous intervals fix at the
    judgement's scale (`ranking.interval_order`, positive = better): mean ± q·σ̂/√n, q the
    two-sided 1 − `level` quantile of t with the noise floor's degrees of freedom."""
    family = collect_family(table, judged.metric, judged.options)
    samples = {sample.arm: sample for sample in family.arms}
    means = np.array([family.sign * samples[arm].mean for arm in names])
    seeds = np.array([len(samples[arm].values) for arm in names])
    half = float(stdtrit(family.noise.dof, 1.0 - level / 2)) * family.noise.sigma / np.sqrt(seeds)
    return interval_order(means - half, means + half)


def _estimable(bounds: tuple[float, float]) -> tuple[float, float]:
    """The bounds, or NaN when they are all of [−1, 1]: the intervals fix no pair of arms."""
    low, high = bounds
    return (math.nan, math.nan) if low <= -1.0 and high >= 1.0 else (low, high)


def _notes(
    rho: float, interval: tuple[float, float], small: str, large: str, confidence: float
) -> list[str]:
    """A ranking change is claimed only when the interval says so."""
    low, high = interval
    if math.isnan(low):
        return [
            f"Spearman ρ not estimable: at {confidence:.0%} simultaneous confidence too few arms "
            f"are apart from each other at {small} and {large} to bound it (arms within noise "
            "of each other can be ranked either way)"
        ]
    if high < LOW_RHO:
        return [
            f"Spearman ρ = {rho:.2f} ({confidence:.0%} interval [{low:.2f}, {high:.2f}]): the "
            f"ranking at {small} is not a ranking at {large}"
        ]
    if not rho >= LOW_RHO:  # also a NaN ρ̂ (a constant side)
        return [
            f"Spearman ρ = {rho:.2f}, but its {confidence:.0%} interval [{low:.2f}, {high:.2f}] "
            f"reaches {LOW_RHO}: these arms cannot tell whether the ranking carries over"
        ]
    return []


def _diverged_only_at_large(small: Judgement, large: Judgement) -> tuple[str, ...]:
    stable_small = {v.arm for v in small.arms if v.verdict != DIVERGED}
    return tuple(v.arm for v in large.arms if v.verdict == DIVERGED and v.arm in stable_small)
