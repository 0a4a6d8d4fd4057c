"""`simulate_null`: audits in which no arm has an effect, judged by the verdict arithmetic.

Each simulated audit draws the baseline, the anchors and every arm from the noise model (σ = 1),
adds `effect` to the first `effect_arms` arms, and runs the verdict arithmetic of `judge` on
arrays of thousands of audits at once (stats/simulation/null_kernel.py), each audit at its own
calibrated
level α′ (stats/simulation/calibrate.py), so what is measured is the whole procedure. It measures
how
often an audit wrongly declares at least one null arm an improver or regressor (the family-wise
error), labels one a candidate, and finds planted effects, next to the power formula.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.errors import ConfigError
from archaudit.stats.inference.corrections import fwer_uncorrected
from archaudit.stats.records.noise_panel import NORMAL, NoiseModel, parse_noise
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.simulation.calibrate import audit_levels
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.null_kernel import (
    CHUNK_DRAWS,
    Outcomes,
    draws_per_audit,
    simulate_outcomes,
)
from archaudit.stats.simulation.power import power
from archaudit.stats.simulation.simulation_checks import WORKING_COPIES, check_memory, check_run


@dataclass(frozen=True)
class NullSimulation(JsonResult):
    """Empirical error rates of the verdict rule, with their Monte-Carlo standard errors."""

    design: AuditDesign
    n_arms: int
    seeds: int
    """Seeds of the smallest arm (all arms, in a balanced design)."""
    baseline_seeds: int
    audits: int
    correction: str
    alpha: float
    reference: str
    calibrated: bool
    effect: float
    effect_arms: int
    seed: int
    test: str
    """The test that drives the verdicts: a registered name (stats/tests/)."""
    fwer: float
    """Share of audits with >= 1 null arm declared improver/regressor (after correction)."""
    fwer_se: float
    candidate_rate: float
    """Share of audits with >= 1 null single-seed arm labelled candidate-* ("run its second
    seed"): not an error of the verdicts, but a seed spent."""
    level: float
    """The median over the audits of their calibrated level α′ (stats/simulation/calibrate.py)."""
    level_min: float
    """The lowest α′ any audit got (its profile showed the widest arms)."""
    fwer_uncorrected: float
    """Share of audits with >= 1 null arm at raw p < α: the uncorrected family of tests."""
    fwer_uncorrected_formula: float
    """1 − (1 − α)^m over the null arms, the rate of independent, exact tests."""
    per_arm_rate: float
    """Share of null arms at raw p < α/m: the per-test size the corrections assume is α/m."""
    found_rate: float
    """Share of planted effects declared improvers (NaN without planted effects)."""
    found_se: float
    power_predicted: float
    """`power(effect, design)` for the planted arms (NaN without planted effects)."""
    noise: str = "normal"
    """The noise model of `fwer` (stats/records/noise_panel.py). `panel` runs all of them."""
    panel: tuple[PanelRate, ...] = ()
    """With `noise="panel"`: the family-wise rate under each model of the panel."""
    panel_worst: PanelRate | None = None


@dataclass(frozen=True)
class PanelRate(JsonResult):
    """A design's family-wise error rate under one noise model."""

    noise: str
    fwer: float
    fwer_se: float
    audits: int
    above_alpha: bool
    """Above α by more than two Monte-Carlo standard errors."""


def panel_rate(rate: float, audits: int, alpha: float, noise: str) -> PanelRate:
    se = binomial_se(rate, audits)
    return PanelRate(noise, rate, se, audits, rate > alpha + 2.0 * se)


def worst(rates: tuple[PanelRate, ...]) -> PanelRate | None:
    """The highest rate (the first of equals, in panel order)."""
    return max(rates, key=lambda r: r.fwer) if rates else None


def simulate_null(
    design: AuditDesign,
    *,
    audits: int = 2000,
    effect: float = 0.0,
    effect_arms: int = 0,
    seed: int = 0,
    noise: str = "normal",
) -> NullSimulation:
    """Simulate `audits` audits of `design`, reproducible from `seed`.

    `effect` is in units of σ. It is added to the first `effect_arms` arms of the design.
    `noise` names the seed-noise model (stats/records/noise_panel.py), or `panel` for all of
    them.
    With `panel`, `fwer` is the normal model's rate and `panel` holds every model's.
    """
    models = parse_noise(noise)
    _check_simulation(design, audits, effect, effect_arms)
    check_run(effect, seed, models, design.m - effect_arms)
    per_chunk = max(CHUNK_DRAWS, draws_per_audit(design)) * WORKING_COPIES
    check_memory(per_chunk + 4.5 * audits * design.m, "--n-arms, --seeds or --audits")
    outcomes, level = judged(design, audits, seed, models[0], effect, effect_arms)
    declared, delta = outcomes.declared(level), outcomes.delta
    null_p = outcomes.p[:, effect_arms:]  # the raw p of the arms without a planted effect
    fwer = float(np.mean(np.any(declared[:, effect_arms:], axis=1)))
    candidate_rate = float(np.mean(outcomes.candidates(level)[:, effect_arms:].any(axis=1)))
    panel = _panel(design, audits, seed, models, fwer, effect, effect_arms)
    planted = audits * effect_arms
    found = declared[:, :effect_arms] & (delta[:, :effect_arms] > 0)
    found_rate = float(np.mean(found)) if planted else math.nan
    return NullSimulation(
        design=design,
        n_arms=design.m,
        seeds=min(design.arm_seeds),
        baseline_seeds=design.baseline_seeds,
        audits=audits,
        correction=design.correction,
        alpha=design.alpha,
        reference=design.reference,
        calibrated=design.calibrated,
        effect=effect,
        effect_arms=effect_arms,
        seed=seed,
        test=design.test,
        fwer=fwer,
        fwer_se=binomial_se(fwer, audits),
        candidate_rate=candidate_rate,
        level=float(np.median(level)),
        level_min=float(np.min(level)),
        fwer_uncorrected=float(np.mean(np.any(null_p < design.alpha, axis=1))),
        fwer_uncorrected_formula=fwer_uncorrected(design.alpha, design.m - effect_arms),
        per_arm_rate=float(np.mean(null_p < design.alpha / design.m)) if null_p.size else math.nan,
        found_rate=found_rate,
        found_se=binomial_se(found_rate, planted) if planted else math.nan,
        power_predicted=_predicted_power(design, effect, effect_arms),
        noise=noise,
        panel=panel,
        panel_worst=worst(panel),
    )


def _check_simulation(design: AuditDesign, audits: int, effect: float, effect_arms: int) -> None:
    if audits < 1:
        raise ConfigError(f"simulate-null needs >= 1 audit; got {audits}")
    if not 0 <= effect_arms <= design.m:
        raise ConfigError(
            f"--effect-arms {effect_arms}: the design has {design.m} arms to plant effects in"
        )
    if effect_arms and effect == 0.0:
        raise ConfigError(f"--effect-arms {effect_arms} needs a nonzero --effect")


def _panel(
    design: AuditDesign,
    audits: int,
    seed: int,
    models: Sequence[NoiseModel],
    first: float,
    effect: float,
    effect_arms: int,
) -> tuple[PanelRate, ...]:
    """Each model's rate when several were asked for (`first` is the first model's, measured)."""
    if len(models) < 2:
        return ()
    rates = [first, *(null_fwer(design, audits, seed, m, effect, effect_arms) for m in models[1:])]
    return tuple(
        panel_rate(rate, audits, design.alpha, model.spec)
        for rate, model in zip(rates, models, strict=True)
    )


def _predicted_power(design: AuditDesign, effect: float, effect_arms: int) -> float:
    """What the power formula says of the planted arms (NaN without planted effects)."""
    if not effect_arms:
        return math.nan
    planted = design.arm_seeds[:effect_arms]
    return float(np.mean([power(effect, design.arm(n)) for n in planted]))


def null_fwer(
    design: AuditDesign,
    audits: int,
    seed: int,
    noise: NoiseModel,
    effect: float = 0.0,
    effect_arms: int = 0,
) -> float:
    """Share of `audits` simulated audits with >= 1 null arm declared, under `noise`."""
    return null_rates(design, audits, seed, noise, effect, effect_arms)[0]


def null_rates(
    design: AuditDesign,
    audits: int,
    seed: int,
    noise: NoiseModel,
    effect: float = 0.0,
    effect_arms: int = 0,
) -> tuple[float, float]:
    """(family-wise rate, false-candidate rate): shares of `audits` simulated audits with >= 1
    null arm declared, and with >= 1 null arm labelled candidate-*, under `noise`."""
    outcomes, level = judged(design, audits, seed, noise, effect, effect_arms)
    null = slice(effect_arms, None)
    declared = outcomes.declared(level)[:, null]
    candidates = outcomes.candidates(level)[:, null]
    return float(np.mean(declared.any(axis=1))), float(np.mean(candidates.any(axis=1)))


def judged(
    design: AuditDesign,
    audits: int,
    seed: int,
    noise: NoiseModel = NORMAL,
    effect: float = 0.0,
    effect_arms: int = 0,
) -> tuple[Outcomes, np.ndarray]:
    """The simulated audits and each one's own calibrated level α′ (stats/simulation/calibrate.py):
    the
    whole procedure, the estimation of the audit's profile included."""
    outcomes = simulate_outcomes(design, audits, seed, noise, effect, effect_arms)
    return outcomes, audit_levels(design, outcomes.bounds)


def binomial_se(rate: float, n: int) -> float:
    """The Monte-Carlo standard error of a share `rate` measured over n trials."""
    return math.sqrt(rate * (1.0 - rate) / n)
