"""`simulate_null`: audits in which no arm has an effect, judged by the verdict arithmetic.

Each simulated audit draws the baseline, the anchors and every arm from N(0, 1) (σ = 1), adds
`effect` to the first `effect_arms` arms, pools σ as `judge` does, and runs the same test
statistics (`family_test.statistics`), corrections and 2σ rule as `judge`, on arrays of thousands
of audits at once. It measures how often an audit wrongly declares at least one null arm an
improver or regressor (the family-wise error) and how often planted effects are found, next to
what the power formula says.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from archaudit.errors import ConfigError
from archaudit.stats.corrections import adjust_pvalues, fwer_uncorrected
from archaudit.stats.design import AuditDesign
from archaudit.stats.dunnett import critical_value
from archaudit.stats.family_test import dunnett_statistics, statistics
from archaudit.stats.noise_models import NORMAL, NoiseModel, parse_noise
from archaudit.stats.power import power
from archaudit.stats.serialize import JsonResult
from archaudit.stats.simulation_checks import WORKING_COPIES, check_memory, check_run
from archaudit.stats.verdicts import within_noise


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
    """The test that drives the verdicts: "pooled-t", "welch" or "z" (paper mode)."""
    fwer: float
    """Share of audits with >= 1 null arm declared improver/regressor (after correction)."""
    fwer_se: float
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
    """The noise model of `fwer` (stats/noise_models.py). `panel` runs all of them."""
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
    `noise` names the seed-noise model (stats/noise_models.py), or `panel` for all of them.
    With `panel`, `fwer` is the normal model's rate and `panel` holds every model's.
    """
    models = parse_noise(noise)
    _check_simulation(design, audits, effect, effect_arms)
    check_run(effect, seed, models, design.m - effect_arms)
    per_chunk = max(CHUNK_DRAWS, draws_per_audit(design)) * WORKING_COPIES
    check_memory(per_chunk + 4.5 * audits * design.m, "--n-arms, --seeds or --audits")
    declared, delta, p = _simulate(design, audits, effect, effect_arms, seed, models[0])
    null_p = p[:, effect_arms:]  # the raw p of the arms without a planted effect
    fwer = float(np.mean(np.any(declared[:, effect_arms:], axis=1)))
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
    declared, _, _ = _simulate(design, audits, effect, effect_arms, seed, noise)
    return float(np.mean(np.any(declared[:, effect_arms:], axis=1)))


CHUNK_DRAWS = 2**21
"""Draws held in memory at once (16 MiB): audits are simulated in chunks of this size, so a
design of 1000 arms × 1000 seeds costs time, not 30 GiB."""


def draws_per_audit(design: AuditDesign) -> int:
    return design.baseline_seeds + sum(design.anchor_seeds) + sum(design.arm_seeds)


def _simulate(
    design: AuditDesign,
    audits: int,
    effect: float,
    effect_arms: int,
    seed: int,
    noise: NoiseModel = NORMAL,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(declared, Δ, raw p), each audits × arms, for `audits` simulated audits of `design`
    under `noise`, drawn in chunks of at most `CHUNK_DRAWS` values."""
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_DRAWS // draws_per_audit(design))
    parts = [
        _simulate_chunk(design, min(chunk, audits - start), effect, effect_arms, rng, noise)
        for start in range(0, audits, chunk)
    ]
    declared, delta, p = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    return declared, delta, p


def _simulate_chunk(
    design: AuditDesign,
    audits: int,
    effect: float,
    effect_arms: int,
    rng: np.random.Generator,
    noise: NoiseModel,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    base = noise.draw(rng, (audits, design.baseline_seeds))
    anchors = [noise.draw(rng, (audits, n)) for n in design.anchor_seeds]
    # the wide arms of `hetero` are the first null arms: the fewest seeds, the hardest case
    sigmas = np.ones(design.m)
    sigmas[effect_arms:] = noise.arm_sigmas(design.m - effect_arms)[::-1]
    shift = np.zeros(design.m)
    shift[:effect_arms] = effect
    n_arm = np.array(design.arm_seeds)
    groups = []
    for n, count in sorted(Counter(design.arm_seeds).items()):
        columns = np.flatnonzero(n_arm == n)
        draws = noise.draw(rng, (audits, count, n)) * sigmas[columns][None, :, None]
        groups.append(draws + shift[columns][None, :, None])
    return family_decisions(design, base, anchors, groups)


def family_decisions(
    design: AuditDesign,
    base: np.ndarray,
    anchors: Sequence[np.ndarray],
    groups: Sequence[np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(declared, Δ, raw p), each audits × arms, of the verdict rule on given seed values:
    (B, n₀) baseline, (B, nₐ) per anchor, and per distinct seed count n of the design's arms
    (ascending) a (B, arms with n seeds, n) array. Positive Δ = better."""
    n_base = design.baseline_seeds
    base_mean, base_var = base.mean(axis=1), base.var(axis=1, ddof=1)
    sum_squares = base_var * (n_base - 1)
    for values in anchors:
        sum_squares = sum_squares + values.var(axis=1, ddof=1) * (values.shape[1] - 1)
    arm_mean = np.concatenate([values.mean(axis=2) for values in groups], axis=1)
    arm_var = np.concatenate(
        [
            values.var(axis=2, ddof=1)
            if values.shape[2] >= 2
            else np.full(values.shape[:2], np.nan)
            for values in groups
        ],
        axis=1,
    )
    for values in groups:
        if values.shape[2] >= 2:
            sum_squares = sum_squares + values.var(axis=2, ddof=1).sum(axis=1) * (
                values.shape[2] - 1
            )
    n_arm = np.array(design.arm_seeds)
    dof = design.sigma_dof
    sigma = np.sqrt(sum_squares / dof)[:, None]
    delta = arm_mean - base_mean[:, None]
    stat, _, p = statistics(
        design.test, delta, n_arm, n_base, sigma, dof, arm_var, base_var[:, None]
    )
    if design.correction == "dunnett":
        rejected = _dunnett_rejections(dunnett_statistics(design.test, stat, p, dof), design)
    else:
        rejected = adjust_pvalues(p, design.correction) < design.alpha
    declared = rejected & ~within_noise(delta, sigma)
    return declared, delta, p


def _dunnett_rejections(stat: np.ndarray, design: AuditDesign) -> np.ndarray:
    """Which arms Dunnett's step-down rejects (p_adj < α), audit by audit.

    Step k rejects the k-th largest |t| when it reaches the critical value of the arms still in
    play; that value depends only on their seed counts, so it is computed once per multiset.
    """
    n_arm = np.array(design.arm_seeds)
    order = np.argsort(-np.abs(stat), axis=1, kind="stable")
    rejected = np.zeros(stat.shape, dtype=bool)

    @cache
    def critical(remaining: tuple[int, ...]) -> float:
        return critical_value(design.alpha, remaining, design.baseline_seeds, design.sigma_dof)

    active = np.ones(len(stat), dtype=bool)
    for k in range(design.m):
        rows = np.flatnonzero(active)
        if not len(rows):
            break
        for row in rows:
            arm = order[row, k]
            remaining = tuple(sorted(n_arm[order[row, k:]].tolist()))
            if abs(stat[row, arm]) >= critical(remaining):
                rejected[row, arm] = True
            else:
                active[row] = False
    return rejected


def binomial_se(rate: float, n: int) -> float:
    """The Monte-Carlo standard error of a share `rate` measured over n trials."""
    return math.sqrt(rate * (1.0 - rate) / n)
