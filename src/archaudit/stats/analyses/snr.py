"""Signal-to-noise per metric: which numbers of an audit can decide anything at its scale.

After Heineman et al. 2025, "Signal and Noise" (arXiv 2508.13144): a metric is useful for a
comparison when the spread between the things compared is large next to its noise. For every
metric at every scale of a results table:

- noise: σ, the seed standard deviation pooled over every arm with two or more finished seeds;
- signal: the standard deviation of the arm means (and their range), and, across scales, the
  spread of the baseline's mean;
- SNR = signal / σ, beside the SNR pure seed noise gives (1/√seeds: arm means of equal arms
  still differ by σ/√n), so an SNR near it means the arms do not differ on this metric;
- each arm's |Δ| from the baseline in σ, and the seeds per arm the design would need to declare
  it (`power.seeds_needed`, corrected over the arms as the options say, Holm by default; None
  below 2σ, which is never declared).

Downstream tasks without signal in the audit are left out first, as every verdict leaves them
out (`archaudit.stats.judging.signal`), so `downstream_avg` here is the one judged.

Choosing the primary metric after looking at arm results is selection: the audit file declares
its primaries before the run, and this table is for planning the next audit.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from archaudit.metrics import Kind, metric_info
from archaudit.names import ResultStatus
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.inference.noise import pooled_sd
from archaudit.stats.judging.signal import check_signal
from archaudit.stats.records.errors import TableError
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import Table
from archaudit.stats.simulation.power import seeds_needed

SELECTION_WARNING = (
    "picking the primary metric after looking at these arm results is selection: declare the "
    "primaries in the audit file before the run (seeds.primary), and use this table to plan "
    "the next audit"
)


@dataclass(frozen=True)
class MetricSignal(JsonResult):
    metric: str
    scale: str
    arms: int
    seeds: float
    """Mean finished seeds per arm."""
    sigma: float
    """Seed σ pooled over the arms with two or more seeds."""
    sigma_dof: int
    spread: float
    """Standard deviation of the arm means."""
    range: float
    """Largest minus smallest arm mean."""
    snr: float
    null_snr: float
    """The SNR seed noise alone gives: 1/√seeds."""
    effects: dict[str, float]
    """|arm mean − baseline mean| / σ per arm."""
    seeds_needed: dict[str, int | None]
    """Seeds per arm to declare each arm's effect at 80% power (None below 2σ: never)."""
    median_effect: float
    largest_effect: float
    seeds_for_largest_effect: int | None
    """Seeds per arm to declare the largest arm effect (None: never, or no arm)."""
    scale_spread: float = math.nan
    """Standard deviation of the baseline's mean across the table's scales (same for all)."""


@dataclass(frozen=True)
class SignalToNoise(JsonResult):
    source: str
    baseline: str
    metrics: tuple[MetricSignal, ...]
    notes: tuple[str, ...] = ()
    """Downstream tasks left out for carrying no signal (`archaudit.stats.judging.signal`)."""
    warning: str = SELECTION_WARNING


def signal_to_noise(
    table: Table,
    options: JudgeOptions = DEFAULT,
    *,
    metrics: Sequence[str] | None = None,
) -> SignalToNoise:
    """SNR of every metric (or `metrics`) at every scale, most informative first.

    `options` names the baseline, and the test (α, correction, power) that the seeds needed
    are planned for. SNR and |Δ|/σ do not depend on the direction of a metric.
    """
    baseline = options.baseline
    table.check_arm(baseline, "baseline")
    signal = check_signal(table)
    table = signal.table
    names = list(metrics) if metrics else [m for m in table.metrics if _is_measurement(m)]
    for name in names:
        table.check_metric(name)
    rows = []
    for metric in names:
        scale_spread = _scale_spread(table, metric, baseline)
        for scale in table.scales:
            found = _metric_signal(table, metric, scale, options)
            if found is not None:
                rows.append(replace(found, scale_spread=scale_spread))
    if not rows:
        raise TableError(
            table.source,
            "no metric has two or more seeds of an arm and two arms at one scale",
            "SNR needs seed noise (>= 2 seeds of an arm) and arms to compare",
        )
    rows.sort(key=lambda r: (-r.snr if math.isfinite(r.snr) else math.inf, r.metric, r.scale))
    return SignalToNoise(
        source=table.source, baseline=baseline, metrics=tuple(rows), notes=signal.notes
    )


def _is_measurement(metric: str) -> bool:
    """Metrics worth a row: not counts, flags or interval ends."""
    return metric_info(metric).kind is Kind.MEASURE


def _arm_values(table: Table, metric: str, scale: str) -> dict[str, np.ndarray]:
    out = {}
    for arm in table.arms_at(scale):
        values = [
            r.value
            for r in table.rows_for(metric, scale, arm)
            if r.status == ResultStatus.OK and math.isfinite(r.value)
        ]
        if values:
            out[arm] = np.asarray(values, dtype=float)
    return out


def _metric_signal(
    table: Table, metric: str, scale: str, options: JudgeOptions
) -> MetricSignal | None:
    baseline = options.baseline
    values = _arm_values(table, metric, scale)
    groups = [v for v in values.values() if len(v) >= 2]
    if len(values) < 2 or not groups:
        return None
    sigma, dof = pooled_sd(groups)
    means = {arm: float(v.mean()) for arm, v in values.items()}
    spread = statistics.stdev(means.values())
    seeds = float(np.mean([len(v) for v in values.values()]))
    effects = {}
    if baseline in means and sigma > 0:
        effects = {a: abs(m - means[baseline]) / sigma for a, m in means.items() if a != baseline}
    needed = {
        arm: seeds_needed(effect, options, n_arms=len(effects)) if effect > 0 else None
        for arm, effect in effects.items()
    }
    return MetricSignal(
        metric=metric,
        scale=scale,
        arms=len(values),
        seeds=seeds,
        sigma=sigma,
        sigma_dof=dof,
        spread=spread,
        range=max(means.values()) - min(means.values()),
        snr=spread / sigma if sigma > 0 else (math.inf if spread > 0 else math.nan),
        null_snr=1 / math.sqrt(seeds),
        effects=effects,
        seeds_needed=needed,
        median_effect=statistics.median(effects.values()) if effects else math.nan,
        largest_effect=max(effects.values(), default=math.nan),
        seeds_for_largest_effect=needed[max(effects, key=effects.__getitem__)] if effects else None,
    )


def _scale_spread(table: Table, metric: str, baseline: str) -> float:
    """Standard deviation of the baseline's mean over the scales (NaN with fewer than two)."""
    per_scale = (_arm_values(table, metric, s).get(baseline) for s in table.scales)
    means = [float(v.mean()) for v in per_scale if v is not None]
    return statistics.stdev(means) if len(means) >= 2 else math.nan
