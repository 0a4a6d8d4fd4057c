"""`simulate_null`: audits in which no arm has an effect, judged by the real verdict code.

Each simulated audit draws the baseline and every arm from N(0, 1) (σ = 1), optionally adds
`effect` to the first `effect_arms` arms, and runs the same `compare_arm` + `decide` as `judge`.
It measures how often an audit wrongly declares at least one null arm an improver or regressor
(the family-wise error) and how often planted effects are found, next to what the formulas say.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from archaudit.errors import ConfigError
from archaudit.stats.compare import compare_arm, decide
from archaudit.stats.corrections import fwer_uncorrected
from archaudit.stats.noise import pooled_sd
from archaudit.stats.power import Design, power
from archaudit.stats.serialize import JsonResult
from archaudit.stats.verdicts import IMPROVER, SIGNIFICANT


@dataclass(frozen=True)
class NullSimulation(JsonResult):
    """Empirical error rates of the verdict rule, with their Monte-Carlo standard errors."""

    arms: int
    seeds: int
    baseline_seeds: int
    audits: int
    correction: str
    alpha: float
    effect: float
    effect_arms: int
    seed: int
    test: str
    """The test that drives the verdicts: "z" (one seed per arm) or "welch"."""
    fwer: float
    """Share of audits with >= 1 null arm declared improver/regressor (after correction)."""
    fwer_se: float
    fwer_uncorrected: float
    """Share of audits with >= 1 null arm at raw p < α: the uncorrected family of tests."""
    fwer_uncorrected_formula: float
    """1 − (1 − α)^m over the null arms; assumes independent, exact tests."""
    found_rate: float
    """Share of planted effects declared improvers (NaN without planted effects)."""
    found_se: float
    power_predicted: float
    """`power(effect, design)` for the same design (NaN without planted effects)."""


def simulate_null(
    *,
    arms: int = 19,
    seeds: int = 3,
    audits: int = 500,
    baseline_seeds: int | None = None,
    correction: str = "holm",
    alpha: float = 0.05,
    effect: float = 0.0,
    effect_arms: int = 0,
    seed: int = 0,
) -> NullSimulation:
    """Simulate `audits` audits of `arms` arms with `seeds` seeds (reproducible from `seed`).

    `baseline_seeds` defaults to `seeds` (at least 2). `effect` is in units of σ.
    """
    if arms < 1 or audits < 1:
        raise ConfigError(f"simulate-null needs >= 1 arm and >= 1 audit; got {arms} and {audits}")
    if not 0 <= effect_arms <= arms or (effect_arms and effect == 0.0):
        raise ConfigError(f"effect_arms must be between 0 and {arms} and needs a nonzero effect")
    design = Design.balanced(seeds, baseline_seeds, arms=arms, alpha=alpha, correction=correction)
    baseline_seeds = design.baseline_seeds
    rng = np.random.default_rng(seed)
    null_arms = arms - effect_arms
    false_families = uncorrected_families = found = 0
    for _ in range(audits):
        baseline = rng.normal(size=baseline_seeds)
        values = rng.normal(size=(arms, seeds))
        values[:effect_arms] += effect
        sigma, _ = pooled_sd([baseline])
        tests = [compare_arm(row, baseline, sigma, 1.0) for row in values]
        _, verdicts = decide(tests, sigma, correction, alpha)
        found += sum(verdict == IMPROVER for verdict in verdicts[:effect_arms])
        false_families += any(verdict in SIGNIFICANT for verdict in verdicts[effect_arms:])
        uncorrected_families += any(test.p < alpha for test in tests[effect_arms:])
    fwer = false_families / audits
    planted = audits * effect_arms
    found_rate = found / planted if planted else math.nan
    return NullSimulation(
        arms=arms,
        seeds=seeds,
        baseline_seeds=baseline_seeds,
        audits=audits,
        correction=correction,
        alpha=alpha,
        effect=effect,
        effect_arms=effect_arms,
        seed=seed,
        test="welch" if seeds >= 2 else "z",
        fwer=fwer,
        fwer_se=_binomial_se(fwer, audits),
        fwer_uncorrected=uncorrected_families / audits,
        fwer_uncorrected_formula=fwer_uncorrected(alpha, null_arms),
        found_rate=found_rate,
        found_se=_binomial_se(found_rate, planted) if planted else math.nan,
        power_predicted=power(effect, design) if planted else math.nan,
    )


def _binomial_se(rate: float, n: int) -> float:
    return math.sqrt(rate * (1.0 - rate) / n)
