"""Backtests of a ladder extrapolation: held-out scales, a stack of curves, calibrated widths.

Every scale is held out in turn and predicted from each smaller set of scales (every origin:
the first k scales fitted, each larger scale predicted at its horizon h, the log N from the
largest scale fitted to it). The errors against the observed Δ̂ do three things:

1. **Stacking.** A mixture of the single-scale prediction and the curves
   (`ladder_fit.SMOOTHERS`), its weights on a grid of the simplex chosen to minimise the
   backtest's squared error per unit of horizon: model averaging, not a pick of one curve.
   Each arm's errors are those of the mixture chosen on the *other* arms (leave one arm out),
   so what is measured was not fitted on what it measures.
2. **Drift.** A mixture's error at horizon h is its seed noise plus a structural part that
   grows with h (an arm whose Δ moves along log N; a curve whose shape is wrong): its variance
   κ²·h² is fitted by moments to the errors beyond their seed noise (a drift τ_b·h² and a bend
   τ_c·h⁴), each arm's own, shrunk towards the median arm's by how far its own estimate
   stands out of its seed noise (`shrink`).
3. **Calibration, per arm**, for each curve's backtest line. The standardised errors
   z = error / √(noise + κ²h²), each with its arm's κ estimated without it, give each arm its own
   width in units of √variance: the root mean square of the arm's z times the Student-t quantile
   at the stated level, its degrees of freedom the arm's effective number of backtest errors
   (`Calibration.quantiles`).

The interval printed is the slope rule's (`slope_rule`: it holds every continuation of the
arm's own slope from a fade to the line at the stated level), scored on the same held-out scales
(`rule_backtest`). The point is the arm's Δ̂ at the largest scale, or the mixture's where it is
claimed (`claims_stack`: its gain in squared error on held-out arms significant, a one-sided
t-test over the arms, *and* the ladder's Δ̂ at their seed-noise floor), held inside the interval.
The interval does not depend on the claim, so an arm's interval is its own whatever arms share
its ladder.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from archaudit.stats.predictions.claim_rates import may_claim
from archaudit.stats.predictions.ladder_fit import (
    CURVES,
    SMOOTHERS,
    LadderArrays,
    predict_linear,
    smoother_weights,
)
from archaudit.stats.predictions.slope_rule import (
    RuleBand,
    arm_slopes,
    rule_forecast,
    seed_quantile,
)
from archaudit.stats.records.serialize import JsonResult

SINGLE_SCALE = "single_scale"
"""The baseline's name where a mixture's would stand."""
STACKED = "stacked"
"""The name of the mixture of curves in the backtest."""
SLOPE_RULE = "slope_rule"
"""The prediction where the stack is not claimed: each arm's Δ̂ at the largest scale, kept inside
the interval of its own slope (`slope_rule`)."""
GRID_STEP = 10
"""The simplex of mixture weights is searched in steps of 1/GRID_STEP."""
CLAIM_LEVEL = 0.05
"""The stack is claimed to beat the single-scale prediction only when its gain on held-out arms
has a one-sided p below this, and ..."""
QUIET_LADDER = 1.25
"""... the ladder's effects are at their seed-noise floor: the mean of Δ̂²/Var(Δ̂) over the arms
and scales (about 1 when every arm is null) below this. On ladders of known truth (simulation
seed 1, docs/predict.md) the p-value alone did not pick out the backtest wins that held at the
target (73% of 419 at p < 0.01, 63% of 59 at p < 0.001): the stack wins by averaging the
scales' seed noise, which pays at the target only where no effect moves far beyond the ladder;
with this gate 86% of 355 were true."""


@dataclass(frozen=True)
class Backtest(JsonResult):
    """One prediction method on the held-out scales, scored beside the single-scale baseline."""

    model: str
    scale: str
    """The largest trained scale."""
    predicted: tuple[str, ...]
    """The scales predicted, each from every smaller set of scales below it."""
    n_arms: int
    """Predictions scored (arms × origins × held-out scales)."""
    confidence: float
    coverage: float
    """Share of the observed Δ̂ inside the calibrated interval (each arm's scale is fitted to
    these errors, so it is near `confidence` by construction; with few predictions coarse)."""
    sign_accuracy: float
    decision_accuracy: float
    """Share of arm pairs ordered as observed."""
    baseline_sign_accuracy: float
    baseline_decision_accuracy: float
    weight: float
    """Its share in the mixture (the mixture itself: 1; the slope rule, in none: NaN)."""
    drift: float
    """√τ_b: the spread of the arms' drift, in Δ per unit of log N (NaN for the slope rule,
    whose width is not fitted to the backtest)."""
    bend: float
    """√τ_c: the spread of the arms' bend, in Δ per unit of log N squared (NaN likewise)."""
    widening: float
    """How much wider than normal the median arm's calibrated interval is (its half-width in
    units of √variance over the normal quantile; NaN likewise)."""

    def summary(self) -> str:
        """One line: the method's scores beside the single-scale baseline's."""
        weight = "" if math.isnan(self.weight) else f" (weight {self.weight:.0%})"
        return (
            f"backtest of {self.model}{weight}: {', '.join(self.predicted)} "
            f"each predicted from the scales below ({self.n_arms} predictions): "
            f"{self.confidence:.0%} intervals held {_pct(self.coverage)}, signs "
            f"{_pct(self.sign_accuracy)}, pairs {_pct(self.decision_accuracy)}; single-scale "
            f"baseline: signs {_pct(self.baseline_sign_accuracy)}, pairs "
            f"{_pct(self.baseline_decision_accuracy)}"
        )


def _pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.0%}"


@dataclass(frozen=True)
class Errors:
    """A method's backtest errors, one per arm × origin × held-out scale."""

    observed: np.ndarray
    """(P,) the held-out Δ̂."""
    error: np.ndarray
    """(P,) observed Δ̂ − predicted."""
    noise: np.ndarray
    """(P,) the seed variance of that error (prediction and observation)."""
    horizon: np.ndarray
    """(P,) log N from the largest scale fitted to the scale predicted."""
    exposure: np.ndarray
    """(P, 2) what a drift and a curvature of Δ along log N cost the prediction (`exposure`)."""
    arm: np.ndarray
    """(P,) the arm's index."""
    group: np.ndarray
    """(P,) the (origin, held-out scale) pair's index: the arms predicted together."""


def exposure(weights: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """(..., 2) what a linear smoother with these weights on the fitted scales, at `distance`
    (x_s − x_new) from them, loses to a Δ that drifts along log N (b·Σ Lₛ dₛ) and to one that
    bends (c·Σ Lₛ dₛ²), squared: its error variance is τ_b·[0] + τ_c·[1] for random b and c.
    The single-scale prediction is exposed to both (h², h⁴); a line only to the bend."""
    first = np.sum(weights * distance, axis=-1)
    second = np.sum(weights * distance**2, axis=-1)
    return np.stack([first**2, second**2], axis=-1)


@dataclass(frozen=True)
class Calibration:
    """What a backtest measured for one method: its structure and the scale of its errors."""

    pooled: np.ndarray
    """(2,) τ_b, τ_c: the variances of the drift and bend along log N of the median arm (the
    ladder's, which the backtest line prints, and the centre each arm's is shrunk to)."""
    structure: np.ndarray
    """(m, 2) each arm's, shrunk towards the median arm's (`shrink`)."""
    z: np.ndarray
    """(P,) the standardised errors |error| / √(noise + exposure·τₐ)."""
    horizon: np.ndarray
    """(P,) their horizons: each arm's scale weighs its errors by h², as the target lies beyond
    every horizon of the backtest, where the structure, not the seed noise, sets the error."""
    arm: np.ndarray
    """(P,) the arm of each error."""

    def quantiles(self, level: float) -> np.ndarray:
        """(m,) each arm's half-width at `level` in units of √variance: the h²-weighted root mean
        square of its z times the Student-t quantile with its effective number of errors
        (Kish's, (Σw)²/Σw²) as degrees of freedom; the predictive distribution of one more
        standardised error when their scale is estimated from those few."""
        arms = int(self.arm.max()) + 1 if len(self.arm) else 0
        weight = self.horizon**2
        total = np.bincount(self.arm, weight, arms)
        squares = np.bincount(self.arm, weight**2, arms)
        scale = np.bincount(self.arm, weight * self.z**2, arms)
        n = total**2 / np.maximum(squares, np.finfo(float).tiny)
        rms = np.sqrt(scale / np.maximum(total, np.finfo(float).tiny))
        return rms * sps.t.ppf((1.0 + level) / 2.0, np.maximum(n, 1.0))

    def covered(self, level: float) -> np.ndarray:
        """(P,) whether each backtest error lies inside its arm's interval at `level`."""
        return self.z <= self.quantiles(level)[self.arm]

    def widening(self, level: float) -> float:
        """The median arm's half-width over the normal quantile's."""
        return float(np.median(self.quantiles(level))) / float(sps.norm.ppf((1.0 + level) / 2.0))


def structural(exposure: np.ndarray, structure: np.ndarray) -> np.ndarray:
    """The structural variance exposure·τ, clipped at 0."""
    return np.maximum(np.sum(exposure * structure, axis=-1), 0.0)


def calibrate(errors: Errors) -> Calibration:
    """Each arm's structure by moments, shrunk (`shrink`) towards the median arm's (the stack
    and its curves are methods of the whole ladder, their mixture chosen on the other arms;
    towards none, the stack's 80% intervals held 74% where it was claimed, 81% so); then the
    standardised errors, each scaled by its arm's structure estimated without it (honest: an
    arm's few errors do not set their own width, so its scale carries the uncertainty of the
    arm's drift too)."""
    excess = errors.error**2 - errors.noise
    arms = int(errors.arm.max()) + 1 if len(errors.arm) else 0
    own, spread = _per_arm(excess, errors.exposure, errors.noise, errors.arm, arms)
    ladder = ladder_structure(own, spread)
    structure = shrink(own, spread, ladder)
    without = _own_without_each(excess, errors.exposure, errors.arm, arms)
    held = shrink(without, spread[errors.arm], ladder)
    variance = errors.noise + structural(errors.exposure, held)
    z = np.abs(errors.error) / np.sqrt(variance)
    return Calibration(ladder, structure, z, errors.horizon, errors.arm)


def ladder_structure(own: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """(2,) the ladder's τ_b, τ_c, what the backtest line prints: the median arm's, shrunk
    towards none by the same rule (`shrink`), its variance that of a median of the arms'
    estimates (π/2 · V / m): on a ladder of quiet arms the median's seed noise is not a
    drift."""
    if not len(own):
        return np.zeros(2)
    noise = math.pi / 2.0 * np.median(spread, axis=0) / len(own)
    return shrink(np.median(own, axis=0), noise, np.zeros(2))


def shrink(own: np.ndarray, spread: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """(..., 2) each arm's τ_b, τ_c moved from `centre` by the share d²/(d² + V) of its own
    departure d, V the seed-noise variance of its estimate (empirical Bayes, as the verdicts'
    moderation): an arm whose errors are seed noise gets the centre (for an arm's width: none,
    `calibrate`), one that drifts well beyond its noise keeps its own."""
    departure = own - centre
    weight = departure**2 / np.maximum(departure**2 + spread, np.finfo(float).tiny)
    return centre + weight * departure


def _per_arm(
    excess: np.ndarray, exposure: np.ndarray, noise: np.ndarray, arm: np.ndarray, arms: int
) -> tuple[np.ndarray, np.ndarray]:
    """((m, 2) each arm's τ_b, τ_c by least squares on its errors, (m, 2) their variances from
    the seed noise alone: Var(error² − noise) = 2·noise² for a normal error)."""
    own, spread = np.zeros((arms, 2)), np.zeros((arms, 2))
    for a in range(arms):
        at = arm == a
        lever = np.linalg.pinv(exposure[at])  # (2, P_a)
        own[a] = lever @ excess[at]
        spread[a] = np.sum(lever**2 * (2.0 * noise[at] ** 2), axis=1)
    return own, spread


def _own_without_each(
    excess: np.ndarray, exposure: np.ndarray, arm: np.ndarray, arms: int
) -> np.ndarray:
    """(P, 2) each error's arm's τ_b, τ_c by least squares on the arm's other errors (the
    minimum-norm solution, as `_per_arm`'s, where they do not determine both)."""
    outer = np.einsum("pi,pj->pij", exposure, exposure)
    moments, sums = np.zeros((arms, 2, 2)), np.zeros((arms, 2))
    np.add.at(moments, arm, outer)
    np.add.at(sums, arm, exposure * excess[:, None])
    held = np.linalg.pinv(moments[arm] - outer, hermitian=True)
    return np.einsum("pij,pj->pi", held, sums[arm] - exposure * excess[:, None])


@dataclass(frozen=True)
class Pieces:
    """Every smoother's backtest pieces, one per arm × origin × held-out scale."""

    weights: np.ndarray
    """(K, P, S) each smoother's weights on the fitted Δ̂ (zero beyond the scales fitted)."""
    fitted: np.ndarray
    """(P, S) the fitted Δ̂ (zero beyond the scales fitted)."""
    variance: np.ndarray
    """(P, S) their seed variances (zero beyond)."""
    observed: np.ndarray
    """(P,) the held-out Δ̂."""
    observed_variance: np.ndarray
    distance: np.ndarray
    """(P, S) x_s − x of the scale predicted."""
    horizon: np.ndarray
    arm: np.ndarray
    group: np.ndarray


def backtest_pieces(ladder: LadderArrays, names: tuple[str, ...], first: int) -> Pieces:
    """Every origin from `first` scales fitted on, every larger scale held out."""
    return _join([_origin(ladder, names, k) for k in range(first, len(ladder.x))])


def _join(origins: list[Pieces]) -> Pieces:
    """The pieces of several origins in one."""
    offsets = np.cumsum([0, *(len(np.unique(o.group)) for o in origins)])
    return Pieces(
        weights=np.concatenate([o.weights for o in origins], axis=1),
        fitted=np.concatenate([o.fitted for o in origins]),
        variance=np.concatenate([o.variance for o in origins]),
        observed=np.concatenate([o.observed for o in origins]),
        observed_variance=np.concatenate([o.observed_variance for o in origins]),
        distance=np.concatenate([o.distance for o in origins]),
        horizon=np.concatenate([o.horizon for o in origins]),
        arm=np.concatenate([o.arm for o in origins]),
        group=np.concatenate([o.group + at for o, at in zip(origins, offsets, strict=False)]),
    )


def _origin(ladder: LadderArrays, names: tuple[str, ...], k: int) -> Pieces:
    """The first k scales fitted; each larger scale predicted (arm-major, then scale)."""
    fit, new = ladder.first(k), ladder.x[k:]
    (m, S), T = ladder.deltas.shape, len(new)
    weights = np.zeros((len(names), m, T, S))
    for i, name in enumerate(names):
        weights[i, ..., :k] = smoother_weights({name: 1.0}, fit.x, 1.0 / fit.variances, new)
    fitted, variance = np.zeros((m, T, S)), np.zeros((m, T, S))
    fitted[..., :k], variance[..., :k] = fit.deltas[:, None], fit.variances[:, None]
    return Pieces(
        weights=weights.reshape(len(names), m * T, S),
        fitted=fitted.reshape(m * T, S),
        variance=variance.reshape(m * T, S),
        observed=ladder.deltas[:, k:].reshape(-1),
        observed_variance=ladder.variances[:, k:].reshape(-1),
        distance=np.tile(ladder.x[None, :] - new[:, None], (m, 1)),
        horizon=np.tile(new - fit.x[-1], m),
        arm=np.repeat(np.arange(m), T),
        group=np.tile(np.arange(T), m),
    )


def mixture_errors(pieces: Pieces, mixes: np.ndarray) -> list[Errors]:
    """The errors of each of the (G, K) mixtures of the smoothers."""
    weights = np.einsum("gk,kps->gps", mixes, pieces.weights)
    error = pieces.observed - np.einsum("gps,ps->gp", weights, pieces.fitted)
    noise = np.einsum("gps,ps->gp", weights**2, pieces.variance) + pieces.observed_variance
    exposed = exposure(weights, pieces.distance)
    return [
        Errors(pieces.observed, error[g], noise[g], pieces.horizon, exposed[g], pieces.arm,
               pieces.group)
        for g in range(len(mixes))
    ]  # fmt: skip


def simplex(parts: int, step: int = GRID_STEP) -> np.ndarray:
    """(G, parts) every mixture with weights in multiples of 1/step, the first part's
    largest first (so that ties go to the single-scale prediction)."""
    grid = [c for c in itertools.product(range(step, -1, -1), repeat=parts) if sum(c) == step]
    return np.array(grid, dtype=float) / step


@dataclass(frozen=True)
class Stack:
    """The mixture chosen on every arm, and the errors of the mixtures chosen without each."""

    mix: dict[str, float]
    held_out: Errors
    """Each arm's errors under the mixture chosen on the other arms."""
    single: Errors
    """The single-scale prediction's errors on the same pieces."""
    p_value: float
    """One-sided p of "the held-out mixture beats the single-scale prediction"."""


def stack(pieces: Pieces, names: tuple[str, ...]) -> Stack:
    """Weights on the simplex that minimise Σ error²/h², all arms and leaving each one out."""
    grid = simplex(len(names))
    mixtures = mixture_errors(pieces, grid)
    per_arm = np.zeros((len(grid), int(pieces.arm.max()) + 1))
    for g, errors in enumerate(mixtures):
        np.add.at(per_arm[g], pieces.arm, errors.error**2)
    best = int(np.argmin(per_arm.sum(1)))
    without = np.argmin(per_arm.sum(1, keepdims=True) - per_arm, axis=0)  # (m,)
    held_out = _pick([mixtures[g] for g in without], pieces.arm)
    single = mixtures[0]  # the grid's first: all single-scale
    return Stack(
        mix=dict(zip(names, (float(w) for w in grid[best]), strict=True)),
        held_out=held_out,
        single=single,
        p_value=_gain_p_value(single, held_out),
    )


def _pick(per_arm: list[Errors], arm: np.ndarray) -> Errors:
    """Each point's errors from the mixture chosen for its arm."""
    fields = ("observed", "error", "noise", "horizon", "exposure", "arm", "group")
    return Errors(*(np.stack([getattr(e, f) for e in per_arm])[arm, np.arange(len(arm))]
                    for f in fields))  # fmt: skip


def _gain_p_value(single: Errors, held_out: Errors) -> float:
    """One-sided t-test over the arms of the mean gain in squared error per unit horizon²."""
    gain = single.error**2 - held_out.error**2
    arms = np.unique(single.arm)
    per_arm = np.array([gain[single.arm == a].mean() for a in arms])
    if len(per_arm) < 2 or not np.any(per_arm):
        return 1.0
    if np.ptp(per_arm) == 0:
        return 0.0 if per_arm[0] > 0 else 1.0
    return float(sps.ttest_1samp(per_arm, 0.0, alternative="greater").pvalue)


def share(hits: np.ndarray) -> float:
    """The share of true values (NaN when there are none)."""
    return float(np.mean(hits)) if len(hits) else float("nan")


def pair_hits(predicted: np.ndarray, observed: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For every pair of arms predicted together: whether the prediction orders it as observed."""
    hits = [
        np.sign(predicted[i] - predicted[j]) == np.sign(observed[i] - observed[j])
        for g in np.unique(group)
        for i, j in itertools.combinations(np.flatnonzero(group == g), 2)
    ]
    return np.array(hits, dtype=bool)


@dataclass(frozen=True)
class Scoring:
    """What every Backtest of one ladder shares."""

    scale: str
    predicted: tuple[str, ...]
    confidence: float
    baseline: Errors
    """The single-scale prediction's errors on the same held-out Δ̂."""


def score(model: str, errors: Errors, weight: float, how: Scoring) -> Backtest:
    """A method's backtest record from its errors, beside the single-scale baseline's."""
    calibration = calibrate(errors)
    observed = errors.observed
    predicted, single = observed - errors.error, observed - how.baseline.error
    return Backtest(
        model=model,
        scale=how.scale,
        predicted=how.predicted,
        n_arms=len(errors.error),
        confidence=how.confidence,
        coverage=share(calibration.covered(how.confidence)),
        sign_accuracy=share(np.sign(predicted) == np.sign(observed)),
        decision_accuracy=share(pair_hits(predicted, observed, errors.group)),
        baseline_sign_accuracy=share(np.sign(single) == np.sign(observed)),
        baseline_decision_accuracy=share(pair_hits(single, observed, errors.group)),
        weight=weight,
        drift=math.sqrt(max(calibration.pooled[0], 0.0)),
        bend=math.sqrt(max(calibration.pooled[1], 0.0)),
        widening=calibration.widening(how.confidence),
    )


@dataclass(frozen=True)
class Forecast:
    """The method: the prediction at the new points and the slope rule's band, the stack
    backtested beside it."""

    model: str
    """SLOPE_RULE (the point A), or STACKED where the stack is claimed to beat the single-scale
    prediction (the point the stack's); either held inside the band (`RuleBand.hold`)."""
    signal: float
    """The mean Δ̂²/Var(Δ̂) over the arms and scales (`quiet_ladder`)."""
    mix: dict[str, float]
    """The stack's weights."""
    p_value: float
    """One-sided p of the stack's gain over the single-scale prediction on held-out arms."""
    candidates: tuple[Backtest, ...]
    """Each curve alone, then the stack, on the origins where every curve fits."""
    backtest: Backtest
    """The slope rule's backtest: the coverage of the band printed."""
    point: np.ndarray
    """(m, T) the prediction at the new points."""
    band: RuleBand
    factor: float = math.nan
    """The target's parameters over the largest trained scale's (where the claim's rate was
    looked up)."""

    def bounds(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """((m, T) low, (m, T) high): the interval at `level` at the new points."""
        return self.band.bounds(level)

    def draws(self, level: float, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n, m) normal draws at the last new point, the interval at `level` their central
        share (centred on the interval, which the point need not be: `ArmSlopes.point`)."""
        low, high = (b[:, -1] for b in self.bounds(level))
        scale = (high - low) / (2.0 * float(sps.norm.ppf((1.0 + level) / 2.0)))
        return (low + high) / 2.0 + scale * rng.standard_normal((n, len(scale)))


def forecast(
    ladder: LadderArrays, scales: tuple[str, ...], new: np.ndarray, *, confidence: float = 0.8
) -> Forecast:
    """Predict every arm's Δ at the log N in `new` (the last one is the target); the ladder
    needs >= 3 scales (every curve is backtested from 2). The interval is the slope rule's; the
    point is A, or the stack's where it is claimed (`claims_stack`), held inside it. An arm's
    interval is its own, whichever point its ladder's other arms let the stack claim."""
    names = tuple(SMOOTHERS)
    common = backtest_pieces(ladder, names, 2)
    stacked = stack(common, names)
    how = Scoring(scales[-1], scales[2:], confidence, stacked.single)
    candidates = (
        *(score(name, _alone(common, names, name), stacked.mix[name], how) for name in CURVES),
        score(STACKED, stacked.held_out, 1.0, how),
    )
    signal = signal_to_noise(ladder)
    factor = math.exp(float(new[-1]) - float(ladder.x[-1]))
    point, rule_band = rule_forecast(ladder, new)
    model = SLOPE_RULE
    if claims_stack(stacked.p_value, signal) and may_claim(factor):
        model = STACKED
        weights = smoother_weights(stacked.mix, ladder.x, 1.0 / ladder.variances, new)
        point = rule_band.hold(predict_linear(weights, ladder.deltas, ladder.variances)[0])
    made = rule_backtest(ladder, scales, confidence)
    return Forecast(
        model, signal, stacked.mix, stacked.p_value, candidates, made, point, rule_band, factor
    )


def rule_backtest(ladder: LadderArrays, scales: tuple[str, ...], confidence: float) -> Backtest:
    """The slope rule from every origin of >= 2 scales (named `scales`), each larger scale held
    out: whether its interval, widened by the held-out Δ̂'s own seed noise (in quadrature, at the
    level's quantile), held the Δ̂, and how its signs and pairs compare with the single-scale
    prediction's on the same Δ̂."""
    dof = float(np.sum(ladder.dof))
    z = seed_quantile(confidence, dof)
    held: list[np.ndarray] = []
    predicted: list[np.ndarray] = []
    single: list[np.ndarray] = []
    observed: list[np.ndarray] = []
    group: list[np.ndarray] = []
    for k in range(2, len(ladder.x)):
        fit = ladder.first(k)
        for j in range(k, len(ladder.x)):
            slopes = arm_slopes(fit, float(ladder.x[j]), dof)
            centre, seen = slopes.centre, ladder.deltas[:, j]
            reach = np.hypot(slopes.halfwidth(confidence), z * np.sqrt(ladder.variances[:, j]))
            held.append(np.abs(seen - centre) <= reach)
            predicted.append(slopes.point())
            single.append(fit.deltas[:, -1])
            observed.append(seen)
            group.append(np.full(len(seen), len(group)))
    flat = [np.concatenate(v) for v in (held, predicted, single, observed, group)]
    covered, point, baseline, seen, groups = flat
    return Backtest(
        model=SLOPE_RULE,
        scale=scales[-1],
        predicted=scales[2:],
        n_arms=len(covered),
        confidence=confidence,
        coverage=share(covered),
        sign_accuracy=share(np.sign(point) == np.sign(seen)),
        decision_accuracy=share(pair_hits(point, seen, groups)),
        baseline_sign_accuracy=share(np.sign(baseline) == np.sign(seen)),
        baseline_decision_accuracy=share(pair_hits(baseline, seen, groups)),
        weight=math.nan,
        drift=math.nan,
        bend=math.nan,
        widening=math.nan,
    )


def signal_to_noise(ladder: LadderArrays) -> float:
    """The mean Δ̂²/Var(Δ̂) over the arms and scales: about 1 where every effect is seed noise."""
    return float(np.mean(ladder.deltas**2 / ladder.variances))


def claims_stack(p_value: float, signal: float) -> bool:
    """Whether "the stack beats the single-scale prediction" may be claimed (and the stack be
    the prediction), where the claim held often enough at the target's distance
    (`claim_rates.may_claim`): its held-out gain significant (p < CLAIM_LEVEL) on a ladder whose
    effects are
    at their seed-noise floor (signal < QUIET_LADDER), where averaging the scales' noise pays
    at the target too."""
    return p_value < CLAIM_LEVEL and signal < QUIET_LADDER


def _alone(pieces: Pieces, names: tuple[str, ...], name: str) -> Errors:
    """One smoother's errors on its own."""
    return mixture_errors(pieces, np.array([[float(n == name) for n in names]]))[0]
