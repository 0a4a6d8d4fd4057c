"""What a verdict at the trained scales says about an untrained target scale (docs/predict.md).

A ladder is >= 3 trained scales of one recipe, their tokens growing with their parameters along
one line in (log N, log D), and a target further out on that line. For every arm, `predict`
gives the predicted Δ at the target with a prediction interval, the probability that its sign
there is the sign at the largest trained scale, and its predicted rank with an interval.

The interval is the slope rule's (`slope_rule`: it holds, at the stated level, every
continuation of the arm's own slope from a fade to the line in log N, whatever the slope's size).
The point is the Δ̂ at the largest trained scale, held inside the interval; a stack of curves is
backtested beside it and is the point ("beats the single-scale baseline") only where its backtest
gain is significant on a ladder whose effects are at their seed-noise floor
(`backtest.claims_stack`). It is "not estimable" only when the ladder has fewer than 3 scales or
no arm is finished at every one of them.
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
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.inference.noise import NoiseFloor, noise_floor
from archaudit.stats.inference.samples import sample_arm
from archaudit.stats.judging.family import left_out
from archaudit.stats.predictions.backtest import (
    CLAIM_LEVEL,
    QUIET_LADDER,
    SINGLE_SCALE,
    SLOPE_RULE,
    STACKED,
    Backtest,
    Forecast,
    forecast,
)
from archaudit.stats.predictions.claim_rates import MIN_RATE, claim_rate
from archaudit.stats.predictions.ladder_fit import LadderArrays, predict_linear, smoother_weights
from archaudit.stats.predictions.ladders import Ladder, check_ladder
from archaudit.stats.predictions.slope_rule import (
    CONTINUATION,
    INTERVAL_IN_WORDS,
)
from archaudit.stats.predictions.slope_rule import IN_WORDS as RULE_IN_WORDS
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import TableLike, load_table
from archaudit.stats.records.target import TargetPrediction

if TYPE_CHECKING:
    from archaudit.stats.judging.judgement import Judgement

MIN_SCALES = 3
MAX_BOOT = 100_000
"""The most draws one prediction makes for P(sign holds) and the ranks: each holds every arm
(memory grows with it), and both are stable to the printed digits long before."""
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
    """The arm's Δ̂ on the trained scales depart from the curve beyond their seed noise (χ²
    test, p < REJECT_LEVEL): the drift term of the interval is what covers it."""


REJECT_LEVEL = 0.01


@dataclass(frozen=True)
class CurveWeight(JsonResult):
    """One curve's weight in the stack (the single-scale prediction's included)."""

    curve: str
    weight: float


@dataclass(frozen=True)
class Prediction(JsonResult):
    metric: str
    baseline: str
    ladder: Ladder
    model: str
    """"slope_rule", "stacked" where the stack is claimed to beat the single-scale prediction
    ("" when not estimable)."""
    confidence: float
    arms: tuple[TargetPrediction, ...]
    backtest: Backtest | None
    """The backtest of the prediction made: its coverage is the interval's measured coverage
    on the ladder's held-out scales; None when not estimable."""
    candidates: tuple[Backtest, ...]
    """Each curve alone, then the stack, on the origins where every curve fits."""
    estimable: bool
    reason: str
    notes: tuple[str, ...]
    mix: tuple[CurveWeight, ...] = ()
    """The stack's weights (the prediction's only where `model` is "stacked")."""
    p_value: float = math.nan
    """One-sided p of the stack's gain in squared error over the single-scale prediction, on
    arms held out of its choice."""
    signal: float = math.nan
    """The mean Δ̂²/Var(Δ̂) over the arms and scales (about 1 where every effect is noise)."""
    curves: tuple[ArmCurve, ...] = ()
    """The prediction made, at every trained scale and out to the target, for plotting."""

    def backtests(self) -> tuple[Backtest, ...]:
        """Each curve's and the stack's backtest, then the slope rule's (whose intervals print):
        the lines `stats` and the report show, and the bars of the report's figure."""
        return (*self.candidates, *((self.backtest,) if self.backtest else ()))

    def brief(self) -> str:
        """`how` in a clause, for a table's title (`stats predict` explains the models in a
        note beside it)."""
        if not self.estimable:
            return "not estimable"
        held = f", {_held(self.backtest)}" if self.backtest else ""
        if self.model == STACKED:
            return f"the stack's point (it beats one scale's) in the slope rule's interval{held}"
        return f"the slope rule (Δ̂ at the largest scale unless its interval rules that out){held}"

    def how(self) -> str:
        """How the prediction was made and how its intervals held in the backtest, in words:
        what `stats` and the report print beside it."""
        if not self.estimable:
            return f"not estimable: {self.reason}"
        what = (
            f"the slope rule: {RULE_IN_WORDS}"
            if self.model == SLOPE_RULE
            else "the stack of curves (" + _mix_text(self.mix) + "), which beats the "
            "single-scale baseline in the backtest, held inside the slope rule's interval"
        )
        test = self.backtest
        if test is None:
            return what
        return f"{what}; its {test.confidence:.0%} intervals {_held(test)}"


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
    reason = _unanswerable(scales, arrays)
    if reason:
        return _not_estimable(metric, options, ladder, names, arrays, confidence, reason, notes)
    grid = np.linspace(arrays.x[0], math.log(ladder.target.params), CURVE_POINTS)
    method = forecast(arrays, scales, grid, confidence=confidence)
    draws = method.draws(confidence, n_boot, np.random.default_rng(seed))
    arms = _arm_rows(names, method, draws, arrays.deltas[:, -1], confidence)
    return Prediction(
        metric=metric,
        baseline=options.baseline,
        ladder=ladder,
        model=method.model,
        confidence=confidence,
        arms=arms,
        backtest=method.backtest,
        candidates=method.candidates,
        estimable=True,
        reason="",
        notes=(*notes, *_method_notes(method), CANNOT_COVER, *_too_wide(arms, method)),
        mix=tuple(CurveWeight(c, w) for c, w in method.mix.items()),
        p_value=method.p_value,
        signal=method.signal,
        curves=_curves(names, arrays, method, grid, confidence),
    )


def _unanswerable(scales: tuple[str, ...], arrays: LadderArrays) -> str:
    """Why no method can answer ("" when one can)."""
    if len(scales) < MIN_SCALES:
        return (
            f"too few scales: {len(scales)} trained ({', '.join(scales)}); an extrapolation "
            f"needs a ladder of >= {MIN_SCALES} (its backtest fits 2 and predicts a third)"
        )
    if not len(arrays.deltas):
        return "no arm besides the baseline is finished at every scale of the ladder"
    return ""


def _curves(
    names: tuple[str, ...], arrays: LadderArrays, method: Forecast, grid: np.ndarray, level: float
) -> tuple[ArmCurve, ...]:
    quantile = sps.t.ppf((1.0 + level) / 2.0, arrays.dof)
    halfwidth = quantile * np.sqrt(arrays.variances)
    low, high = method.bounds(level)
    fitted, _ = predict_linear(
        smoother_weights({SINGLE_SCALE: 1.0}, arrays.x, 1.0 / arrays.variances, arrays.x),
        arrays.deltas,
        arrays.variances,
    )
    chi2 = np.sum((arrays.deltas - fitted) ** 2 / arrays.variances, axis=1)
    rejected = sps.chi2.sf(chi2, max(1, len(arrays.x) - 1)) < REJECT_LEVEL

    def floats(values: np.ndarray) -> tuple[float, ...]:
        return tuple(float(v) for v in values)

    return tuple(
        ArmCurve(
            arm=name,
            observed=floats(arrays.deltas[i]),
            seed_halfwidth=floats(halfwidth[i]),
            params=floats(np.exp(grid)),
            fitted=floats(method.point[i]),
            low=floats(low[i]),
            high=floats(high[i]),
            rejected=bool(rejected[i]),
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
    """(arm names in order of name, their means at each ladder scale, notes on arms left
    out)."""
    scales = tuple(s.name for s in ladder.scales)
    for scale in scales:
        table.resolve_scale(scale)
    skip = {options.baseline, *left_out(table, options)}
    # The arms by name, not in the table's order: P(sign holds) and the ranks draw every arm
    # together, and the order of a file's rows must change nothing (issue 57).
    samples = {
        arm: [sample_arm(table, metric, scale, arm) for scale in scales]
        for arm in sorted(table.arms)
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
        sigma=pooled_over_scales(floors),
        dof=np.array([f.dof for f in floors], dtype=float),
    )
    return tuple(kept), arrays, notes


def pooled_over_scales(floors: list[NoiseFloor]) -> np.ndarray:
    """(S,) one seed σ for every scale: each scale's, pooled over the scales by their degrees
    of freedom (issue 55). Each scale's own σ rests on few runs (2 degrees of freedom for one
    arm and the baseline at 2 seeds), and the interval is the seed noise of the Δ̂ at the
    largest scale times a calibrated scale: with that scale's own σ the width rode on one
    erratic estimate, and the backtest's drift, fitted to error² − seed variance, on the other
    scales' (known-truth ladders, one arm alone: the constant and null arms' 80% intervals held
    78% on average, 69-86% between cells, at 1.45 times the seed-noise-only width; pooled 81%,
    72-87%, at 1.36 times; docs/predict.md). The slope rule's t reads the same σ. Where the
    scales' σ differ beyond their noise (`unequal_sigmas`) each keeps its own: a real ladder's
    seed noise may fall with scale, and one σ would then misstate the largest scale's."""
    sigma = np.array([f.sigma for f in floors])
    dof = np.array([f.dof for f in floors], dtype=float)
    if unequal_sigmas(sigma, dof):
        return sigma
    pooled = math.sqrt(float(np.sum(dof * sigma**2)) / max(float(np.sum(dof)), 1.0))
    return np.full_like(sigma, pooled)


UNEQUAL_LEVEL = 0.01
"""Bartlett's test p below which the scales' σ are taken to differ (`unequal_sigmas`)."""


def unequal_sigmas(sigma: np.ndarray, dof: np.ndarray) -> bool:
    """Bartlett's test of one σ for every scale from each scale's σ and degrees of freedom
    (scipy's `bartlett` wants the runs; the statistic needs only these): p < UNEQUAL_LEVEL."""
    used = dof > 0
    if used.sum() < 2 or np.any(sigma[used] <= 0.0):
        return False
    nu, variance = dof[used], sigma[used] ** 2
    pooled = float(np.sum(nu * variance) / np.sum(nu))
    statistic = float(np.sum(nu) * math.log(pooled) - np.sum(nu * np.log(variance)))
    correction = 1.0 + (float(np.sum(1.0 / nu)) - 1.0 / float(np.sum(nu))) / (3.0 * (len(nu) - 1))
    return float(sps.chi2.sf(statistic / correction, len(nu) - 1)) < UNEQUAL_LEVEL


def interval(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed interval of the draws along axis 0."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail], axis=0)
    return low, high


def _arm_rows(
    names: tuple[str, ...],
    method: Forecast,
    draws: np.ndarray,
    largest: np.ndarray,
    confidence: float,
) -> tuple[TargetPrediction, ...]:
    """Per arm: the point and its calibrated interval; P(sign holds) and ranks from the (B, m)
    draws."""
    point = method.point[:, -1]
    low, high = (b[:, -1] for b in method.bounds(confidence))
    holds = np.mean(np.sign(draws) == np.sign(largest), axis=0)
    ranks = sps.rankdata(-draws, axis=1)  # 1 = the largest Δ, the best
    rank_low, rank_high = interval(ranks, confidence)
    point_ranks = sps.rankdata(-point, method="min")
    return tuple(
        TargetPrediction(
            arm=name,
            delta=float(point[i]),
            interval=(float(low[i]), float(high[i])),
            p_sign_holds=float(holds[i]),
            rank=int(point_ranks[i]),
            rank_interval=(float(np.floor(rank_low[i])), float(np.ceil(rank_high[i]))),
            delta_largest=float(largest[i]),
            estimable=True,
            method=method.model,
            confidence=confidence,
            coverage=method.backtest.coverage,
        )
        for i, name in enumerate(names)
    )


CANNOT_COVER = (
    "what the interval cannot cover: a change of Δ that the ladder does not show (an effect that "
    "starts to move only beyond the largest trained scale), or one that moves on beyond the "
    f"ladder faster than its slope along it (the interval holds continuations from "
    f"{CONTINUATION[0]:g} to {CONTINUATION[1]:g} times that slope, of any size); on known-truth "
    'ladders such arms were covered below the stated level (docs/predict.md, "What the interval '
    'cannot cover")'
)
"""A note under every prediction: no interval built from the ladder's own Δ̂ can hold a change
the ladder's Δ̂ do not show (issue 55)."""

WIDTH_LEVEL = 0.95
"""The level of the intervals compared with the range of the effects."""


def _too_wide(arms: tuple[TargetPrediction, ...], method: Forecast) -> tuple[str, ...]:
    """A note when the median 95% interval is wider than the range of the predicted effects
    (the baseline's 0 included): the intervals hold, but they cannot tell the arms apart."""
    low, high = method.bounds(WIDTH_LEVEL)
    width = float(np.median(high[:, -1] - low[:, -1]))
    effects = [0.0, *(a.delta for a in arms)]
    spread = max(effects) - min(effects)
    if width <= spread:
        return ()
    return (
        f"the 95% intervals (median width {width:.3g}) are wider than the range of the effects "
        f"({spread:.3g}): at the target this ladder cannot tell the arms apart",
    )


def _held(test: Backtest) -> str:
    """How the backtest's intervals held, as `how` and `brief` say it."""
    return f"held {test.coverage:.0%} of {test.n_arms} backtest predictions"


def _mix_text(mix: tuple[CurveWeight, ...]) -> str:
    return ", ".join(f"{w.curve} {w.weight:.0%}" for w in mix if w.weight)


def _method_notes(method: Forecast) -> tuple[str, ...]:
    mix = _mix_text(tuple(CurveWeight(c, w) for c, w in method.mix.items()))
    test = method.backtest
    gate = (
        f"the stack of curves ({mix}) against the single-scale prediction on held-out arms: "
        f"one-sided p = {method.p_value:.2g}; the ladder's mean Δ̂²/Var(Δ̂) = "
        f"{method.signal:.2g}"
    )
    held = (
        f"on the ladder's own held-out scales the rule's {test.confidence:.0%} intervals held "
        f"{test.coverage:.0%} of {test.n_arms}"
    )
    if method.model == STACKED:
        return (
            f"the point is the stack's, held inside the slope rule's interval: the stack beats "
            f"the single-scale baseline ({gate}: p < {CLAIM_LEVEL:g} on a ladder whose effects "
            f"are at their seed-noise floor, < {QUIET_LADDER:g}; {_rate_text(method.factor)}, "
            f"docs/predict.md); {INTERVAL_IN_WORDS}; {held}",
        )
    return (
        f"the prediction is the slope rule's: {RULE_IN_WORDS} (computed, not fitted: "
        f"docs/predict.md); {held} "
        f"({gate}; the stack is claimed only at p < {CLAIM_LEVEL:g} with that below "
        f"{QUIET_LADDER:g}, where its backtest wins carried to the target on known-truth "
        f"ladders, and at a target distance where the claim held >= {MIN_RATE:.0%} of the "
        f"time: {_rate_text(method.factor)}, docs/predict.md)",
    )


def _rate_text(factor: float) -> str:
    rate = claim_rate(factor)
    if rate is None:
        return f"the claim was never measured as far as {factor:.3g}× the largest scale"
    return rate.sentence()


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
        confidence=confidence,
        arms=arms,
        backtest=None,
        candidates=(),
        estimable=False,
        reason=reason,
        notes=notes,
    )
