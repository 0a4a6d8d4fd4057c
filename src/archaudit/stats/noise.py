"""The noise floor σ: the seed standard deviation of the baseline, pooled over anchor arms."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.stats.errors import TooFewSeedsError, ZeroNoiseError
from archaudit.stats.samples import ArmSample
from archaudit.stats.serialize import JsonResult


@dataclass(frozen=True, slots=True)
class NoiseFloor(JsonResult):
    """σ = √(Σ(nᵢ − 1)·sᵢ² / Σ(nᵢ − 1)) over the baseline and anchors (PROTOCOL R5)."""

    sigma: float
    dof: int
    """Σ(nᵢ − 1): the degrees of freedom behind σ."""
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    """Finished seeds per arm, in the order of `arms`."""


def pooled_sd(groups: Sequence[np.ndarray]) -> tuple[float, int]:
    """The pooled sample standard deviation (n − 1 denominators) and its degrees of freedom."""
    dof = sum(len(group) - 1 for group in groups)
    sum_squares = sum(float(np.sum((group - np.mean(group)) ** 2)) for group in groups)
    return math.sqrt(sum_squares / dof), dof


def noise_floor(samples: Sequence[ArmSample], metric: str) -> NoiseFloor:
    """σ from the baseline (first sample) and anchors; each needs >= 2 finished seeds."""
    for index, sample in enumerate(samples):
        if len(sample.values) < 2:
            role = "anchor" if index else "baseline"
            raise TooFewSeedsError(
                sample.where,
                f"{role} {sample.arm!r} has {len(sample.values)} finished seed(s) of {metric!r} "
                f"at scale {sample.scale!r}; the noise floor needs at least 2",
                "run more seeds of it (the protocol asks for 3 or more)",
            )
    baseline = samples[0]
    if float(np.ptp(baseline.values)) == 0.0:
        raise ZeroNoiseError(
            baseline.where,
            f"all {len(baseline.values)} seeds of baseline {baseline.arm!r} have {metric} = "
            f"{baseline.values[0]}, so the noise floor is zero",
            "check that the seeds really differ (data order and init must depend on the seed)",
        )
    sigma, dof = pooled_sd([sample.values for sample in samples])
    return NoiseFloor(
        sigma=sigma,
        dof=dof,
        arms=tuple(s.arm for s in samples),
        seeds=tuple(len(s.values) for s in samples),
    )
