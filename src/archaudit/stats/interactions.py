"""Factorial interactions and the "harmful count" model (OlmPool, 2026; PROTOCOL.md).

An audit is factorial when its arm names are combinations of binary choices joined by a
separator, e.g. `qk_norm+gqa` (the baseline is the combination with no choice on). The additive
model predicts each combination's mean from one main effect per choice; the interaction of a
combination is what it does beyond that prediction. The harmful-count model instead predicts
the metric from how many harmful choices (those with a worse-than-baseline main effect) are on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from archaudit.stats.errors import DesignError
from archaudit.stats.judge import collect_family
from archaudit.stats.serialize import JsonResult
from archaudit.stats.table import Table


@dataclass(frozen=True)
class CombinationEffect(JsonResult):
    """One combination: observed mean, additive prediction and interaction (positive = better
    than additive)."""

    arm: str
    factors: tuple[str, ...]
    n_seeds: int
    observed: float
    predicted: float
    interaction: float
    interaction_sigmas: float
    """Interaction in units of the noise floor σ."""
    harmful_count: int


@dataclass(frozen=True)
class Interactions(JsonResult):
    """Additive fit, interaction terms and the harmful-count regression on arm means."""

    metric: str
    scale: str
    baseline: str
    sigma: float
    main_effects: dict[str, float]
    """Each choice's additive effect, positive = better."""
    harmful: tuple[str, ...]
    r2_additive: float
    r2_harmful_count: float
    combinations: tuple[CombinationEffect, ...]


def interactions(
    table: Table,
    metric: str,
    *,
    baseline: str = "baseline",
    lower_is_better: bool = False,
    scale: str | None = None,
    separator: str = "+",
) -> Interactions:
    """Fit the additive model over the finished combinations at one scale."""
    family = collect_family(
        table, metric, baseline=baseline, lower_is_better=lower_is_better, scale=scale
    )
    samples = [family.baseline, *(s for s in family.arms if s.status == "ok")]
    present = [
        frozenset() if s is family.baseline else frozenset(s.arm.split(separator)) for s in samples
    ]
    factors = sorted(set().union(*present))
    design = np.array([[1.0] + [f in combo for f in factors] for combo in present])
    if (
        len(factors) < 2
        or len(samples) <= len(factors) + 1
        or (np.linalg.matrix_rank(design) < len(factors) + 1)
    ):
        raise DesignError(
            table.source,
            f"arms {[s.arm for s in samples]} do not identify an additive model of "
            f"{len(factors)} choices plus interactions",
            f"name arms as choices joined by {separator!r} (e.g. a{separator}b) and run every "
            "single choice plus at least one combination",
        )
    # Oriented so that positive = better; reported means stay in the metric's own units.
    means = np.array([s.mean for s in samples])
    better = family.sign * means
    coefficients, fitted, r2_additive = _least_squares(design, better)
    main_effects = dict(zip(factors, coefficients[1:].tolist(), strict=True))
    harmful = tuple(f for f in factors if main_effects[f] < 0)
    counts = np.array([sum(f in combo for f in harmful) for combo in present])
    _, _, r2_count = _least_squares(np.column_stack([np.ones(len(counts)), counts]), better)
    sigma = family.noise.sigma
    return Interactions(
        metric=metric,
        scale=family.scale,
        baseline=baseline,
        sigma=sigma,
        main_effects=main_effects,
        harmful=harmful,
        r2_additive=r2_additive,
        r2_harmful_count=r2_count if np.ptp(counts) > 0 else math.nan,
        combinations=tuple(
            CombinationEffect(
                arm=sample.arm,
                factors=tuple(sorted(combo)),
                n_seeds=len(sample.values),
                observed=float(means[i]),
                predicted=float(family.sign * fitted[i]),
                interaction=float(better[i] - fitted[i]),
                interaction_sigmas=float((better[i] - fitted[i]) / sigma),
                harmful_count=int(counts[i]),
            )
            for i, (sample, combo) in enumerate(zip(samples, present, strict=True))
        ),
    )


def _least_squares(design: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Coefficients, fitted values and R² of an ordinary least-squares fit."""
    coefficients, *_ = np.linalg.lstsq(design, y, rcond=None)
    fitted = design @ coefficients
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum((y - fitted) ** 2)) / total if total > 0 else math.nan
    return coefficients, fitted, r2
