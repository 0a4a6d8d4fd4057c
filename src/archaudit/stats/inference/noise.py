"""The noise floor σ: the seed standard deviation pooled over every group the design allows.

The baseline, the anchors and every tested arm with >= 2 seeds each estimate the same σ (the
seed noise of one recipe; an effect moves an arm's mean, not its spread), so σ is pooled over
all of them with Σ(nᵢ − 1) degrees of freedom. Few degrees of freedom make σ itself uncertain:
the chi-square interval says how much, and the calibrated tests use those degrees of freedom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from archaudit.stats.inference.samples import ArmSample
from archaudit.stats.records.errors import TooFewSeedsError, ZeroNoiseError
from archaudit.stats.records.serialize import JsonResult

INTERVAL_LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class NoiseFloor(JsonResult):
    """σ = √(Σ(nᵢ − 1)·sᵢ² / Σ(nᵢ − 1)) over the baseline, anchors and multi-seed arms."""

    sigma: float
    dof: int
    """Σ(nᵢ − 1): the degrees of freedom behind σ."""
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    """Finished seeds per arm, in the order of `arms`."""
    interval: tuple[float, float]
    """95% chi-square interval of the true σ: σ·√(ν/χ²_{0.975,ν}) to σ·√(ν/χ²_{0.025,ν})."""


def pooled_sd(groups: Sequence[np.ndarray]) -> tuple[float, int]:
    """The pooled sample standard deviation (n − 1 denominators) and its degrees of freedom."""
    dof = sum(len(group) - 1 for group in groups)
    sum_squares = sum(float(np.sum((group - np.mean(group)) ** 2)) for group in groups)
    return math.sqrt(sum_squares / dof), dof


def sigma_interval(sigma: float, dof: int, level: float = INTERVAL_LEVEL) -> tuple[float, float]:
    """The chi-square confidence interval of a standard deviation estimated with `dof` df."""
    tail = (1.0 - level) / 2.0
    return (
        sigma * math.sqrt(dof / sps.chi2.isf(tail, dof)),
        sigma * math.sqrt(dof / sps.chi2.ppf(tail, dof)),
    )


def noise_floor(
    samples: Sequence[ArmSample], metric: str, pooled_arms: Sequence[ArmSample] = ()
) -> NoiseFloor:
    """σ from the baseline (first sample) and anchors, each with >= 2 finished seeds, pooled with
    the `pooled_arms` that have >= 2 seeds."""
    for index, sample in enumerate(samples):
        if len(sample.values) < 2:
            role = "anchor" if index else "baseline"
            raise TooFewSeedsError(
                sample.where,
                f"{role} {sample.arm!r} has {len(sample.values)} finished seed(s) of {metric!r} "
                f"at scale {sample.scale!r}; the noise floor needs at least 2",
                "run more seeds of it (the protocol asks for 3 or more)",
            )
    groups = [*samples, *(arm for arm in pooled_arms if len(arm.values) >= 2)]
    sigma, dof = pooled_sd([sample.values for sample in groups])
    if sigma == 0.0:
        baseline = samples[0]
        raise ZeroNoiseError(
            baseline.where,
            f"every group pooled into the noise floor ({', '.join(s.arm for s in groups)}) has "
            f"identical seeds of {metric} at scale {baseline.scale!r}, so the noise floor is zero",
            "check that the seeds really differ (data order and init must depend on the seed)",
        )
    return NoiseFloor(
        sigma=sigma,
        dof=dof,
        arms=tuple(s.arm for s in groups),
        seeds=tuple(len(s.values) for s in groups),
        interval=sigma_interval(sigma, dof),
    )
