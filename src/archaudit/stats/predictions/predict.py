"""What a verdict at the trained scales says about an untrained target scale (docs/predict.md).

A ladder is >= 3 trained scales of one recipe, their tokens growing with their parameters along
one line in (log N, log D), and a target further out on that line. For every arm, `predict`
fits Δₐ(log N) over the ladder (the curves of `ladder_fit`, chosen by their backtest), and
gives the predicted Δ at the target with a prediction interval, the probability that its sign
there is the sign at the largest trained scale, and its predicted rank with an interval.

Every prediction carries its backtest (`backtest.py`): the largest trained scale is held out
and predicted from the others, beside the single-scale baseline (the Δ̂ at the largest scale
fitted). A method that does not beat that baseline on the audit's own ladder says so, and the
prediction falls back to the baseline: the Δ̂ at the largest trained scale with its seed
interval. It is "not estimable" when the ladder has fewer than 3 scales, when the intervals are
wider than the range of the effects (nothing could be ranked), or, for one arm, when its
curve is rejected by the χ² test of its fit.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats as sps

from archaudit.errors import ConfigError, did_you_mean
from archaudit.metrics import lower_is_better
from archaudit.stats.family import left_out
from archaudit.stats.inference.noise import noise_floor
from archaudit.stats.inference.samples import sample_arm
from archaudit.stats.options import DEFAULT, JudgeOptions
from archaudit.stats.predictions.backtest import SINGLE_SCALE, Backtest, forecast, interval
from archaudit.stats.predictions.ladder_fit import CurveFit, LadderArrays
from archaudit.stats.predictions.ladders import Ladder, check_ladder
from archaudit.stats.predictions.target import TargetPrediction
from archaudit.stats.serialize import JsonResult
from archaudit.stats.table import TableLike, load_table

if TYPE_CHECKING:
    from archaudit.stats.judgement import Judgement

MIN_SCALES = 3
MAX_BOOT = 100_000
"""The most bootstrap replicates one prediction draws: each holds every arm's curve (memory
grows with it), and intervals are stable to the printed digits long before."""
CURVE_POINTS = 25
"""Points at which the report draws each fitted curve, from the smallest scale to the target."""


@dataclass(frozen=True)
class ArmCurve(JsonResult):
    """What the report's ladder plot draws for one arm (metric units, baseline − arm: positive =
    better)."""

    arm: str
    observed: tuple[float, ...]
    """Δ̂ at each trained scale."""
    seed_halfwidth: tuple[float, ...]
    """Half-width of each Δ̂'s seed interval (t quantile at the confidence × its SE)."""
    params: tuple[float, ...]
    """Parameters at which the curve is drawn, from the smallest scale to the target."""
    fitted: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    """The curve's prediction interval at each of `params` (NaN where a shared fit left the
    arm out)."""
    rejected: bool = False
    """The χ² test of its fit rejects the curve for this arm."""


@dataclass(frozen=True)
class Prediction(JsonResult):
    metric: str
    baseline: str
    ladder: Ladder
    model: str
    """The curve adopted, or "single_scale" when no curve beat the baseline's backtest."""
    curve: str
    """The curve with the best backtest (the one adopted unless it lost to the baseline)."""
    confidence: float
    dispersion: float
    """The adopted curve's φ = max(1, χ²/df) that widened its intervals (1 for the baseline)."""
    arms: tuple[TargetPrediction, ...]
    backtest: Backtest | None
    """The chosen curve's backtest (largest trained scale held out); None when not estimable."""
    candidates: tuple[Backtest, ...]
    estimable: bool
    reason: str
    notes: tuple[str, ...]
    curves: tuple[ArmCurve, ...] = ()
    """The chosen curve, fitted on every trained scale, for plotting (adopted or not)."""

    @property
    def beats_baseline(self) -> bool:
        return self.model != SINGLE_SCALE


def check_prediction_options(confidence: float, n_boot: int, seed: int) -> None:
    """One-line refusals for options out of their meaning, before anything is computed."""
    if not (isinstance(confidence, int | float) and 0.0 < confidence < 1.0):
        raise ConfigError(f"--confidence {confidence}: a level strictly between 0 and 1, e.g. 0.8")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or not 1 <= n_boot <= MAX_BOOT:
        raise ConfigError(f"--n-boot {n_boot}: a whole number of replicates from 1 to {MAX_BOOT:,}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"--seed {seed}: a whole number >= 0")


def predict(
    table: TableLike,
    metric: str,
    ladder: Ladder,
    options: JudgeOptions = DEFAULT,
    *,
    confidence: float = 0.8,
    n_boot: int = 2000,
    seed: int = 0,
) -> Prediction:
    """Each arm's Δ at `ladder.target`, from its Δ̂ at the ladder's trained scales."""
    check_prediction_options(confidence, n_boot, seed)
    table = load_table(table)
    if options.baseline not in table.arms:
        raise ConfigError(
            f"--baseline {options.baseline!r} is not an arm of the table"
            f"{did_you_mean(options.baseline, table.arms)}"
        )
    check_loss(table, metric, options.lower_is_better)
    check_ladder(ladder)
    scales = tuple(s.name for s in ladder.scales)
    names, arrays, notes = ladder_arrays(table, metric, ladder, options)
    if len(scales) < MIN_SCALES:
        reason = (
            f"too few scales: {len(scales)} trained ({', '.join(scales)}); an extrapolation "
            f"needs a ladder of >= {MIN_SCALES} (and a backtest needs 2 below the largest)"
        )
        return _not_estimable(metric, options, ladder, names, arrays, confidence, reason, notes)
    grid = np.linspace(arrays.x[0], math.log(ladder.target.params), CURVE_POINTS)
    method = forecast(arrays, scales, grid, confidence=confidence, n_boot=n_boot, seed=seed)
    fit, adopted, curve = method.fit, method.adopted, method.curve
    rows = _arm_rows(names, method.point, method.draws, arrays.deltas[:, -1], confidence)
    if adopted:
        rows = [_blank(row, _rejection(fit, i)) if fit.rejected[i] else row
                for i, row in enumerate(rows)]  # fmt: skip
    arms, reason = _too_wide(tuple(rows), method.draws)
    candidates = method.candidates
    return Prediction(
        metric=metric,
        baseline=options.baseline,
        ladder=ladder,
        model=curve if adopted else SINGLE_SCALE,
        curve=curve,
        confidence=confidence,
        dispersion=fit.dispersion if adopted else 1.0,
        arms=arms,
        backtest=candidates[curve],
        candidates=tuple(candidates.values()),
        estimable=not reason,
        reason=reason,
        notes=(*notes, *_backtest_notes(candidates[curve], adopted)),
        curves=_curves(names, arrays, fit, grid, confidence),
    )


def _curves(
    names: tuple[str, ...], arrays: LadderArrays, fit: CurveFit, grid: np.ndarray, level: float
) -> tuple[ArmCurve, ...]:
    quantile = sps.t.ppf((1.0 + level) / 2.0, arrays.dof)
    halfwidth = quantile * np.sqrt(arrays.variances)
    low, high = interval(fit.draws, level)

    def floats(values: np.ndarray) -> tuple[float, ...]:
        return tuple(float(v) for v in values)

    return tuple(
        ArmCurve(
            arm=name,
            observed=floats(arrays.deltas[i]),
            seed_halfwidth=floats(halfwidth[i]),
            params=floats(np.exp(grid)),
            fitted=floats(fit.point[i]),
            low=floats(low[i]),
            high=floats(high[i]),
            rejected=bool(fit.rejected[i]),
        )
        for i, name in enumerate(names)
    )


def with_prediction(judgement: Judgement, prediction: Prediction) -> Judgement:
    """The judgement with each arm's `at_target` filled in, when it judges the prediction's
    metric at the largest trained scale (other judgements are returned as they are)."""
    largest = prediction.ladder.scales[-1].name
    if (judgement.metric, judgement.scale) != (prediction.metric, largest):
        return judgement
    by_arm = {a.arm: a for a in prediction.arms}
    arms = tuple(dataclasses.replace(a, at_target=by_arm.get(a.arm)) for a in judgement.arms)
    return dataclasses.replace(judgement, arms=arms)


def check_loss(table: TableLike, metric: str, given: bool | None) -> None:
    """Only losses are extrapolated: an accuracy jumps with scale (DataDecide found it far less
    predictable than the gold answer's bits per byte)."""
    table.check_metric(metric)
    if lower_is_better(metric, given):
        return
    losses = [m for m in table.metrics if lower_is_better(m, None)]
    raise ConfigError(
        f"{metric!r} is not a loss: accuracies jump with scale and are not extrapolated; predict "
        "a loss or the bits per byte of the gold answers (as DataDecide does)"
        + (f", e.g. --metric {losses[0]} (the table has {', '.join(losses)})" if losses else "")
    )


def ladder_arrays(
    table: TableLike, metric: str, ladder: Ladder, options: JudgeOptions
) -> tuple[tuple[str, ...], LadderArrays, tuple[str, ...]]:
    """(arm names, their means at each ladder scale, notes on arms left out)."""
    scales = tuple(s.name for s in ladder.scales)
    for scale in scales:
        table.resolve_scale(scale)
    skip = {options.baseline, *left_out(table, options)}
    samples = {
        arm: [sample_arm(table, metric, scale, arm) for scale in scales]
        for arm in table.arms
        if arm not in skip or arm == options.baseline
    }
    base = samples.pop(options.baseline)
    kept = {arm: s for arm, s in samples.items() if all(x.status == "ok" for x in s)}
    notes = tuple(
        f"{arm} is left out: not finished at every scale of the ladder ({', '.join(scales)})"
        for arm in samples
        if arm not in kept
    )
    floors = [
        noise_floor([base[i]], metric, [s[i] for s in kept.values()]) for i in range(len(scales))
    ]
    rows = [base, *kept.values()]
    # Negated means make every Δ baseline − arm: positive = a lower loss = better, the sign
    # `stats` prints (predict judges losses only: `check_loss`).
    arrays = LadderArrays(
        x=np.log([s.params for s in ladder.scales]),
        means=-np.array([[x.mean for x in row] for row in rows]),
        counts=np.array([[len(x.values) for x in row] for row in rows], dtype=float),
        sigma=np.array([f.sigma for f in floors]),
        dof=np.array([f.dof for f in floors], dtype=float),
    )
    return tuple(kept), arrays, notes


def _arm_rows(
    names: tuple[str, ...],
    point: np.ndarray,
    draws: np.ndarray,
    largest: np.ndarray,
    confidence: float,
) -> list[TargetPrediction]:
    """Per arm: the point, its interval, P(sign holds) and ranks from the (B, m) draws; arms
    without a prediction (NaN) are left out of the ranks."""
    shown = np.isfinite(point)
    low, high = interval(draws, confidence)
    holds = np.mean(np.sign(draws) == np.sign(largest), axis=0)
    ranks = np.full(draws.shape, np.nan)
    ranks[:, shown] = sps.rankdata(-draws[:, shown], axis=1)  # 1 = the largest Δ, the best
    rank_low, rank_high = interval(ranks, confidence)
    point_ranks = np.zeros(len(point), dtype=int)
    point_ranks[shown] = sps.rankdata(-point[shown], method="min")
    return [
        TargetPrediction(
            arm=name,
            delta=float(point[i]),
            interval=(float(low[i]), float(high[i])),
            p_sign_holds=float(holds[i]),
            rank=int(point_ranks[i]),
            rank_interval=(float(np.floor(rank_low[i])), float(np.ceil(rank_high[i]))),
            delta_largest=float(largest[i]),
            estimable=True,
        )
        for i, name in enumerate(names)
    ]


def _rejection(fit: CurveFit, arm: int) -> str:
    return (
        f"its {fit.model} curve is rejected by the χ² test of its fit (χ² = {fit.chi2[arm]:.1f} "
        f"on {fit.arm_dof:.1f} df, p = {fit.pvalues[arm]:.2g})"
    )


def _blank(row: TargetPrediction, reason: str) -> TargetPrediction:
    nan = math.nan
    return TargetPrediction(
        arm=row.arm,
        delta=nan,
        interval=(nan, nan),
        p_sign_holds=nan,
        rank=0,
        rank_interval=(nan, nan),
        delta_largest=row.delta_largest,
        estimable=False,
        reason=reason,
    )


WIDTH_LEVEL = 0.95
"""The level of the intervals compared with the range of the effects."""


def _too_wide(
    arms: tuple[TargetPrediction, ...], draws: np.ndarray
) -> tuple[tuple[TargetPrediction, ...], str]:
    """Every arm blanked when the median 95% interval is wider than the range of the predicted
    effects (the baseline's 0 included): the ladder cannot tell the arms apart. The level is
    fixed, not the prediction's: at 80% a family of null arms passes about half the time."""
    shown = np.array([a.estimable for a in arms])
    if not shown.any():
        return arms, "no arm's curve fits its ladder"
    low, high = interval(draws[:, shown], WIDTH_LEVEL)
    width = float(np.median(high - low))
    effects = [0.0, *(a.delta for a in arms if a.estimable)]
    spread = max(effects) - min(effects)
    if width <= spread:
        return arms, ""
    reason = (
        f"the 95% intervals (median width {width:.3g}) are wider than the range of the effects "
        f"({spread:.3g}): this ladder cannot tell the arms apart at the target"
    )
    return tuple(_blank(a, reason) for a in arms), reason


def _backtest_notes(test: Backtest, adopted: bool) -> tuple[str, ...]:
    if adopted:
        return (
            f"the {test.model} curve beat the single-scale baseline in the backtest (each of "
            f"{', '.join(test.predicted)} predicted from the scales below); the curve was chosen "
            "on that same backtest, so its figures flatter it "
            "(docs/predict.md measures the method on ladders it was not chosen on)",
        )
    return (
        "no curve beat the single-scale baseline in the backtest (best: "
        f"{test.model}, {test.decision_accuracy:.0%} of pairs vs "
        f"{test.baseline_decision_accuracy:.0%}): the prediction is the Δ̂ at the largest "
        "trained scale, with its seed interval",
    )


def _not_estimable(
    metric: str,
    options: JudgeOptions,
    ladder: Ladder,
    names: tuple[str, ...],
    arrays: LadderArrays,
    confidence: float,
    reason: str,
    notes: tuple[str, ...],
) -> Prediction:
    nan = math.nan
    arms = tuple(
        TargetPrediction(name, nan, (nan, nan), nan, 0, (nan, nan), float(d), False, reason)
        for name, d in zip(names, arrays.deltas[:, -1], strict=True)
    )
    return Prediction(
        metric=metric,
        baseline=options.baseline,
        ladder=ladder,
        model="",
        curve="",
        confidence=confidence,
        dispersion=nan,
        arms=arms,
        backtest=None,
        candidates=(),
        estimable=False,
        reason=reason,
        notes=notes,
    )
