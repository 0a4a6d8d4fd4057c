"""Verdict classes of docs/protocol.md and the rule that assigns them."""

from __future__ import annotations

from enum import StrEnum

import numpy as np


class Verdict(StrEnum):
    """An arm's verdict (docs/verdicts.md#verdict-classes); compares and prints as its text."""

    WITHIN_NOISE = "within-noise"
    NOMINAL_IMPROVER = "nominal-improver"
    NOMINAL_REGRESSOR = "nominal-regressor"
    CANDIDATE_IMPROVER = "candidate-improver"
    """A single-seed arm significant only if its own seed σ equals the pool's: one more seed
    (its own spread) decides (docs/verdicts.md)."""
    CANDIDATE_REGRESSOR = "candidate-regressor"
    IMPROVER = "improver"
    REGRESSOR = "regressor"
    DIVERGED = "diverged"
    INCOMPLETE = "incomplete"


WITHIN_NOISE, NOMINAL_IMPROVER, NOMINAL_REGRESSOR = (
    Verdict.WITHIN_NOISE,
    Verdict.NOMINAL_IMPROVER,
    Verdict.NOMINAL_REGRESSOR,
)
CANDIDATE_IMPROVER, CANDIDATE_REGRESSOR = Verdict.CANDIDATE_IMPROVER, Verdict.CANDIDATE_REGRESSOR
IMPROVER, REGRESSOR = Verdict.IMPROVER, Verdict.REGRESSOR
DIVERGED, INCOMPLETE = Verdict.DIVERGED, Verdict.INCOMPLETE
"""The members by their old names, which the analyses import."""
VERDICTS = tuple(Verdict)
SIGNIFICANT = (IMPROVER, REGRESSOR)

NOISE_SIGMAS = 2.0
"""An effect smaller than this many noise floors is within noise, whatever its p-value."""


def within_noise(delta: float | np.ndarray, sigma: float | np.ndarray) -> bool | np.ndarray:
    """|Δ| < 2σ: too small to be called an effect, whatever its p-value (elementwise)."""
    return np.abs(delta) < NOISE_SIGMAS * sigma


def classify(delta: float, sigma: float, p_adjusted: float, alpha: float) -> Verdict:
    """The verdict of a finished arm: Δ is "positive = better", p is already corrected."""
    if within_noise(delta, sigma):
        return WITHIN_NOISE
    if p_adjusted < alpha:
        return IMPROVER if delta > 0 else REGRESSOR
    return NOMINAL_IMPROVER if delta > 0 else NOMINAL_REGRESSOR


def nominal(verdict: str) -> Verdict:
    """A significant verdict lowered to nominal (where the design cannot support it)."""
    lowered: dict[str, Verdict] = {IMPROVER: NOMINAL_IMPROVER, REGRESSOR: NOMINAL_REGRESSOR}
    return lowered.get(verdict, Verdict(verdict))


def candidate(verdict: str) -> Verdict:
    """A nominal verdict raised to a candidate (a within-noise one stays within noise)."""
    raised: dict[str, Verdict] = {
        NOMINAL_IMPROVER: CANDIDATE_IMPROVER,
        NOMINAL_REGRESSOR: CANDIDATE_REGRESSOR,
    }
    return raised.get(verdict, Verdict(verdict))
