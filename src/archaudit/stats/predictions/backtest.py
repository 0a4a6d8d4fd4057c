"""Backtests of a ladder extrapolation against the single-scale baseline.

Each scale with 2 or more scales below it (the largest trained scale last) is held out in turn
and predicted by the curves fitted on the scales below it; the predictions are scored against
what was observed: the coverage of the prediction
intervals (for the observed Δ̂, so they carry that scale's seed noise too), the share of arms
whose sign was right, and the share of arm pairs ordered right (pairwise decision accuracy).
The single-scale baseline (DataDecide's strong baseline, Magnusson et al. 2025) takes the Δ̂ at
the largest scale that was fitted as its prediction.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from archaudit.stats.predictions.ladder_fit import (
    CURVES,
    CurveFit,
    LadderArrays,
    bootstrap_deltas,
    fit_curves,
)
from archaudit.stats.serialize import JsonResult

SINGLE_SCALE = "single_scale"
"""The baseline's name where a model's would stand."""


@dataclass(frozen=True)
class Backtest(JsonResult):
    """One model's prediction of a held-out scale, scored beside the single-scale baseline."""

    model: str
    scale: str
    """The largest trained scale (the last one predicted)."""
    predicted: tuple[str, ...]
    """The scales predicted, each from the scales below it."""
    n_arms: int
    """Predictions scored (arms × scales predicted): arms whose curve was not rejected on the
    scales fitted."""
    confidence: float
    coverage: float
    """Share of arms whose observed Δ̂ fell inside its prediction interval."""
    sign_accuracy: float
    decision_accuracy: float
    """Share of arm pairs the prediction ordered as observed."""
    baseline_sign_accuracy: float
    baseline_decision_accuracy: float
    interval_score: float
    """Mean interval score (width + 2/(1 − confidence) × the miss), in metric units: lower is
    better, rewarding narrow intervals that still hold the observation."""
    calibration: float = 1.0
    """max(1, √(median z² / 0.455)), a robust RMS of the standardized errors: how much wider
    the intervals had to be to hold the backtest's observations as often as they claim; the
    adopted curve's intervals are widened by it."""

    def summary(self) -> str:
        """One line: the curve's scores beside the single-scale baseline's."""
        return (
            f"backtest of {self.model}: {', '.join(self.predicted)} each predicted from the "
            f"scales below ({self.n_arms} predictions): {self.confidence:.0%} intervals held "
            f"{_pct(self.coverage)}, signs {_pct(self.sign_accuracy)}, pairs "
            f"{_pct(self.decision_accuracy)}; single-scale baseline: signs "
            f"{_pct(self.baseline_sign_accuracy)}, pairs {_pct(self.baseline_decision_accuracy)}"
        )

    @property
    def beats_baseline(self) -> bool:
        """More pairs right than the baseline, or as many and more signs right."""
        return (self.decision_accuracy, self.sign_accuracy) > (
            self.baseline_decision_accuracy,
            self.baseline_sign_accuracy,
        )


def _pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.0%}"


def share(hits: np.ndarray) -> float:
    """The share of true values (NaN when there are none: no arm was scored)."""
    return float(np.mean(hits)) if len(hits) else float("nan")


def pair_hits(predicted: np.ndarray, observed: np.ndarray) -> list[bool]:
    """For every arm pair: whether the prediction orders it as observed."""
    return [
        bool(np.sign(predicted[i] - predicted[j]) == np.sign(observed[i] - observed[j]))
        for i, j in itertools.combinations(range(len(observed)), 2)
    ]


def observed_draws(
    fit_draws: np.ndarray, ladder: LadderArrays, counts: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """(B, m) draws of the Δ̂ a scale with these seed `counts` ((m + 1,), baseline first) would
    show: the fitted curve's draws plus that scale's seed noise (σ of the largest fitted scale)."""
    variance = ladder.sigma[-1] ** 2 * (1.0 / counts[1:] + 1.0 / counts[0])
    return fit_draws + rng.standard_normal(fit_draws.shape) * np.sqrt(variance)


def interval(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed interval of the draws along axis 0."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail], axis=0)
    return low, high


CHI2_1_MEDIAN = 0.4549364
"""The median of χ² with 1 degree of freedom: median(z²) of well-calibrated errors."""
MIN_FITTED = 2
"""A backtest fits at least this many scales below the one it predicts."""


def backtest(
    model: str,
    ladder: LadderArrays,
    scales: tuple[str, ...],
    *,
    confidence: float = 0.8,
    n_boot: int = 2000,
    seed: int = 0,
) -> Backtest:
    """Predict each scale that has >= MIN_FITTED scales below it from those (rolling origins,
    the largest trained scale last), and pool the scores."""
    rng = np.random.default_rng(seed)
    hits: dict[str, list] = {key: [] for key in ("cover", "sign", "pairs", "bsign", "bpairs")}
    scores, z2 = [], []
    for k in range(MIN_FITTED, len(scales)):
        kept = ladder.first(k)
        fit = fit_curves(model, kept, ladder.x[k : k + 1], rng, n_boot)
        scored = ~fit.rejected  # a rejected curve predicts nothing; the baseline is scored alike
        counts = np.concatenate([ladder.counts[:1, k], ladder.counts[1:, k][scored]])
        draws = observed_draws(fit.draws[:, scored, 0], kept, counts, rng)
        low, high = interval(draws, confidence)
        observed, predicted = ladder.deltas[scored, k], fit.point[scored, 0]
        single = kept.deltas[scored, -1]
        miss = np.maximum(low - observed, 0.0) + np.maximum(observed - high, 0.0)
        hits["cover"] += list((low <= observed) & (observed <= high))
        hits["sign"] += list(np.sign(predicted) == np.sign(observed))
        hits["bsign"] += list(np.sign(single) == np.sign(observed))
        hits["pairs"] += pair_hits(predicted, observed)
        hits["bpairs"] += pair_hits(single, observed)
        scores += list(high - low + 2.0 / (1.0 - confidence) * miss)
        z2 += list((observed - predicted) ** 2 / np.maximum(draws.var(axis=0), 1e-300))
    return Backtest(
        model=model,
        scale=scales[-1],
        predicted=scales[MIN_FITTED:],
        n_arms=len(hits["sign"]),
        confidence=confidence,
        coverage=share(np.array(hits["cover"])),
        sign_accuracy=share(np.array(hits["sign"])),
        decision_accuracy=share(np.array(hits["pairs"])),
        baseline_sign_accuracy=share(np.array(hits["bsign"])),
        baseline_decision_accuracy=share(np.array(hits["bpairs"])),
        interval_score=share(np.array(scores)),
        calibration=max(1.0, math.sqrt(np.median(z2) / CHI2_1_MEDIAN)) if z2 else 1.0,
    )


def choose_model(backtests: dict[str, Backtest]) -> str:
    """The model whose backtest predicted the most arms (rejected the fewest curves), then
    ordered the most pairs right, then got the most signs right, then had the best interval
    score."""

    def merit(name: str) -> tuple[float, float, float, float]:
        b = backtests[name]
        decisions = -1.0 if np.isnan(b.decision_accuracy) else b.decision_accuracy
        return (b.n_arms, decisions, b.sign_accuracy, -b.interval_score)

    return max(backtests, key=merit)  # ties: the simplest (CURVES order)


@dataclass(frozen=True)
class Forecast:
    """The method: every curve backtested, the best one fitted on every scale, and adopted only
    if its backtest beat the single-scale baseline's."""

    curve: str
    adopted: bool
    candidates: dict[str, Backtest]
    fit: CurveFit
    """The chosen curve at the new points (adopted or not)."""
    point: np.ndarray
    """(m,) the prediction at the last new point: the curve's, or the single-scale Δ̂."""
    draws: np.ndarray
    """(B, m) its bootstrap draws (of the true Δ)."""


def forecast(
    ladder: LadderArrays,
    scales: tuple[str, ...],
    new: np.ndarray,
    *,
    confidence: float = 0.8,
    n_boot: int = 2000,
    seed: int = 0,
) -> Forecast:
    """Predict every arm's Δ at the log N in `new` (the last one is the target)."""
    candidates = {
        model: backtest(model, ladder, scales, confidence=confidence, n_boot=n_boot, seed=seed)
        for model in CURVES
    }
    curve = choose_model(candidates)
    rng = np.random.default_rng(seed)
    fit = fit_curves(curve, ladder, new, rng, n_boot)
    adopted = candidates[curve].beats_baseline
    if adopted:  # widened by what the backtest measured
        point = fit.point[:, -1]
        draws = point + candidates[curve].calibration * (fit.draws[..., -1] - point)
    else:  # the single-scale baseline: Δ̂ at the largest trained scale, from its seed noise
        point, draws = ladder.deltas[:, -1], bootstrap_deltas(ladder, rng, n_boot)[..., -1]
        spread = math.sqrt(drift(ladder) * max(0.0, float(new[-1] - ladder.x[-1])))
        draws = draws + spread * rng.standard_normal(draws.shape)
    return Forecast(curve, adopted, candidates, fit, point, draws)


def drift(ladder: LadderArrays) -> float:
    """τ²: how far the arms' true Δ wander per unit of log N beyond what seed noise explains,
    from the steps between successive scales (a random walk in log N; 0 when they do not):
    the single-scale baseline's interval at a target grows by τ²·(log N_target − log N_L)."""
    steps = np.diff(ladder.deltas, axis=1) ** 2
    noise = ladder.variances[:, 1:] + ladder.variances[:, :-1]
    return max(0.0, float(np.mean((steps - noise) / np.diff(ladder.x))))
