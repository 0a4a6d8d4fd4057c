"""Depth sensitivity: how much an arm's final loss degrades as the model deepens, against the
baseline's (docs/stability.md), the depth analogue of Wortsman et al.'s LR sensitivity.

Xiong et al. 2020 (arXiv 2002.04745, §3.2) show that Post-LN's expected gradient at its last
layers grows with depth while Pre-LN's does not: Post-LN trains worse the deeper it is, at a
rate Pre-LN tolerates. The depth test (`stability.judge_depth`) asks whether the arm's runs are
worse than the baseline's *at* the deeper models; it has nothing to say when the arm is better
at the sweep's depth and worse deeper (the two cancel). This test asks about the trend.

For one arm, at each depth rate r of the depth stress, with m(r, L) the seeds' mean of the
clamped final loss min(L, L₀) at L layers and L₁ the sweep's (fewest) layers:

    D(r) = mean over the deeper L of m(r, L) − m(r, L₁),   D = mean over the depth rates of D(r)

the **depth sensitivity** (nats; a run that broke counts as L₀, as in the LR sensitivity). The
test statistic is ΔD = D(arm) − D(baseline): positive = the arm degrades more with depth (more
fragile). It is a weighted sum of per-stratum mean differences (arm − baseline), a stratum being
a (rate, layers) cell: weight −1/R at the sweep's depth, +1/(R·|deeper|) at each deeper one.

Its p is a stratified randomisation test: the arm/baseline labels are shuffled among the runs of
each stratum (`permutations` Monte-Carlo draws, the observed split counted), two-sided. Exact
under the null "at every stratum the arm's runs and the baseline's are exchangeable"; an arm
whose loss differs from the baseline's by the same amount at every depth has E[ΔD] = 0 and only
widens the permutation distribution (conservative). One test per arm of the depth stress forms
its own family, corrected by Holm: `more-fragile` when the corrected p < α and ΔD > 0,
`more-robust` when ΔD < 0, `within-noise` otherwise, `not estimable` when a stratum lacks two
runs of either, the two differ in strata, or there is no deeper model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.stats.analyses.stability import (
    NOT_ESTIMABLE,
    StabilityOutcome,
    SweepRun,
)
from archaudit.stats.inference.corrections import adjust_pvalues, error_rate

PERMUTATIONS = 4999


@dataclass(frozen=True)
class LossStratum:
    """The clamped final losses of the arm's and the baseline's runs at one (rate, layers),
    and the stratum's weight in ΔD."""

    arm: tuple[float, ...]
    base: tuple[float, ...]
    weight: float


@dataclass(frozen=True)
class DepthSensitivity:
    """An arm against the baseline in the depth stress: ΔD and its test, corrected over the
    depth stress's arms (module docstring)."""

    def __post_init__(self) -> None:  # a record read back from JSON holds the member too
        object.__setattr__(self, "verdict", StabilityOutcome(self.verdict))

    arm: str
    baseline: str
    delta: float
    """ΔD = D(arm) − D(baseline), nats: positive = the arm's loss rises more with depth."""
    degradation: float
    """D(arm): its mean clamped loss at the deeper models minus at the sweep's depth."""
    baseline_degradation: float
    p: float | None
    p_adjusted: float | None
    verdict: StabilityOutcome
    alpha: float
    correction: str
    error_rate: str


def _key(run: SweepRun) -> tuple[float, int]:
    return (run.lr, run.layers)


def sensitivity_strata(
    arm: Sequence[SweepRun], base: Sequence[SweepRun]
) -> list[LossStratum] | None:
    """The strata of ΔD, one per (rate, layers) of the depth stress, weighted as in the module
    docstring; None unless both have the same strata, two runs or more in each, and every rate
    has a model deeper than the sweep's."""
    keys = sorted({_key(r) for r in base})
    if not keys or keys != sorted({_key(r) for r in arm}):
        return None
    rates = sorted({lr for lr, _ in keys})
    strata = []
    for lr in rates:
        layers = sorted(n for r, n in keys if r == lr)
        if len(layers) < 2:
            return None
        for n in layers:
            a = tuple(r.clamped for r in arm if _key(r) == (lr, n))
            b = tuple(r.clamped for r in base if _key(r) == (lr, n))
            if len(a) < 2 or len(b) < 2:
                return None
            weight = -1.0 if n == layers[0] else 1.0 / (len(layers) - 1)
            strata.append(LossStratum(a, b, weight / len(rates)))
    return strata


def degradation(runs: Sequence[SweepRun]) -> float:
    """D of one arm's depth-stress runs (module docstring); NaN without a deeper model."""
    rates = sorted({r.lr for r in runs})
    per_rate = []
    for lr in rates:
        layers = sorted({r.layers for r in runs if r.lr == lr})
        means = [np.mean([r.clamped for r in runs if _key(r) == (lr, n)]) for n in layers]
        if len(means) > 1:
            per_rate.append(float(np.mean(means[1:]) - means[0]))
    return float(np.mean(per_rate)) if per_rate else math.nan


def sensitivity_test(
    strata: Sequence[LossStratum], permutations: int = PERMUTATIONS, seed: int = 0
) -> tuple[float, float]:
    """(ΔD, two-sided p) of the stratified randomisation test: (1 + #|ΔD*| ≥ |ΔD|)/(1 + N)."""
    rng = np.random.default_rng(seed)
    observed = 0.0
    draws = np.zeros(permutations)
    for stratum in strata:
        a, b = np.array(stratum.arm), np.array(stratum.base)
        observed += stratum.weight * (a.mean() - b.mean())
        pooled = np.concatenate((a, b))
        order = rng.random((permutations, len(pooled))).argsort(axis=1)
        shuffled = pooled[order]
        gap = shuffled[:, : len(a)].mean(axis=1) - shuffled[:, len(a) :].mean(axis=1)
        draws += stratum.weight * gap
    extreme = int(np.sum(np.abs(draws) >= abs(observed) - 1e-12))
    return float(observed), (1 + extreme) / (1 + permutations)


def judge_depth_sensitivity(
    runs: Mapping[str, Sequence[SweepRun]],
    baseline: str,
    *,
    alpha: float = 0.05,
    correction: str = "holm",
    permutations: int = PERMUTATIONS,
) -> list[DepthSensitivity]:
    """Every arm of the depth stress but the baseline against it: one test of ΔD per arm,
    corrected over those arms (its own family)."""
    base = runs[baseline]
    strata = {a: sensitivity_strata(runs[a], base) for a in runs if a != baseline}
    tested = {a: sensitivity_test(s, permutations) for a, s in strata.items() if s is not None}
    pvalues = [p for _, p in tested.values()]
    corrected = [float(p) for p in adjust_pvalues(pvalues, correction)] if pvalues else []
    adjusted = dict(zip(tested, corrected, strict=True))
    out = []
    for arm in strata:
        delta, p = tested.get(arm, (math.nan, None))
        out.append(
            DepthSensitivity(
                arm,
                baseline,
                delta,
                degradation(runs[arm]),
                degradation(base),
                p,
                adjusted.get(arm),
                _verdict(delta, adjusted.get(arm), alpha),
                alpha,
                correction,
                error_rate(correction),
            )
        )
    return out


def _verdict(delta: float, p_adjusted: float | None, alpha: float) -> StabilityOutcome:
    if p_adjusted is None:
        return NOT_ESTIMABLE
    if p_adjusted >= alpha or delta == 0:
        return StabilityOutcome.WITHIN_NOISE
    return StabilityOutcome.MORE_FRAGILE if delta > 0 else StabilityOutcome.MORE_ROBUST
