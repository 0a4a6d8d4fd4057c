"""Backtests of a ladder extrapolation against the single-scale baseline.

Hold out the largest `held_out` trained scales, fit the curves on the rest, predict the largest
scale, and score the prediction against what was observed there: the coverage of the prediction
intervals (for the observed Δ̂, so they carry that scale's seed noise too), the share of arms
whose sign was right, and the share of arm pairs ordered right (pairwise decision accuracy).
The single-scale baseline (DataDecide's strong baseline, Magnusson et al. 2025) takes the Δ̂ at
the largest scale that was fitted as its prediction.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from archaudit.stats.ladder_fit import LadderArrays, fit_curves
from archaudit.stats.serialize import JsonResult

SINGLE_SCALE = "single_scale"
"""The baseline's name where a model's would stand."""


@dataclass(frozen=True)
class Backtest(JsonResult):
    """One model's prediction of a held-out scale, scored beside the single-scale baseline."""

    model: str
    held_out: int
    """How many of the largest scales were left out of the fit."""
    scale: str
    """The scale predicted (the largest trained one)."""
    fitted_on: tuple[str, ...]
    n_arms: int
    """Arms scored: those whose curve was not rejected on the scales fitted."""
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

    @property
    def beats_baseline(self) -> bool:
        """More pairs right than the baseline, or as many and more signs right."""
        return (self.decision_accuracy, self.sign_accuracy) > (
            self.baseline_decision_accuracy,
            self.baseline_sign_accuracy,
        )


def share(hits: np.ndarray) -> float:
    """The share of true values (NaN when there are none: no arm was scored)."""
    return float(np.mean(hits)) if len(hits) else float("nan")


def sign_accuracy(predicted: np.ndarray, observed: np.ndarray) -> float:
    return share(np.sign(predicted) == np.sign(observed))


def decision_accuracy(predicted: np.ndarray, observed: np.ndarray) -> float:
    """Share of arm pairs whose order the prediction gets right (NaN with fewer than 2 arms)."""
    pairs = list(itertools.combinations(range(len(observed)), 2))
    if not pairs:
        return float("nan")
    right = [
        np.sign(predicted[i] - predicted[j]) == np.sign(observed[i] - observed[j]) for i, j in pairs
    ]
    return float(np.mean(right))


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


def backtest(
    model: str,
    ladder: LadderArrays,
    scales: tuple[str, ...],
    *,
    held_out: int = 1,
    confidence: float = 0.8,
    n_boot: int = 2000,
    seed: int = 0,
) -> Backtest:
    """Predict the largest scale of `ladder` from all but its `held_out` largest scales."""
    rng = np.random.default_rng(seed)
    kept = ladder.first(len(scales) - held_out)
    fit = fit_curves(model, kept, ladder.x[-1:], rng, n_boot)
    draws = observed_draws(fit.draws[..., 0], kept, ladder.counts[:, -1], rng)
    scored = ~fit.rejected  # a rejected curve predicts nothing; the baseline is scored alike
    low, high = interval(draws[:, scored], confidence)
    observed, predicted = ladder.deltas[scored, -1], fit.point[scored, 0]
    single = kept.deltas[scored, -1]
    miss = np.maximum(low - observed, 0.0) + np.maximum(observed - high, 0.0)
    return Backtest(
        model=model,
        held_out=held_out,
        scale=scales[-1],
        fitted_on=scales[: len(kept.x)],
        n_arms=len(observed),
        confidence=confidence,
        coverage=share((low <= observed) & (observed <= high)),
        sign_accuracy=sign_accuracy(predicted, observed),
        decision_accuracy=decision_accuracy(predicted, observed),
        baseline_sign_accuracy=sign_accuracy(single, observed),
        baseline_decision_accuracy=decision_accuracy(single, observed),
        interval_score=share(high - low + 2.0 / (1.0 - confidence) * miss),
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
