"""The vectorised kernel of the design simulations: draw thousands of audits of a fixed design
and run the verdict arithmetic on all of them at once.

Own code rather than a library call because scipy's tests take one family at a time and the
calibration needs millions of them: every statistic here is the one `judge` computes
(the family's registered test, `StatTest.statistics`; the corrections; the 2σ rule), broadcast
over a leading audit axis.
A family's outcome is kept level-free: each audit's *declaring level* (the smallest corrected p
among its arms beyond 2σ) is what a calibrated level α′ is compared with
(stats/simulation/calibrate.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.names import Test
from archaudit.stats.inference.corrections import adjust_pvalues
from archaudit.stats.inference.dunnett import critical_value, max_t_tail, max_t_tails
from archaudit.stats.records.noise_panel import NORMAL, NoiseModel
from archaudit.stats.records.verdicts import within_noise
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.profile import ratio_bounds, single_seed_bound
from archaudit.stats.tests import Spread, statistical_test

CHUNK_DRAWS = 2**21
"""Draws held in memory at once (16 MiB): audits are simulated in chunks of this size, so a
design of 1000 arms × 1000 seeds costs time, not 30 GiB."""
DRAW_BUDGET = 40_000_000
"""The most seed values one noise model's simulation of one design may draw (a few seconds)."""
MIN_AUDITS = 200
"""Fewer affordable audits than this: the design is not simulated (its rate says why)."""


@dataclass(frozen=True)
class Outcomes:
    """What a batch of audits of one design shows, before any level is applied (B audits, m
    arms). Δ is positive = better."""

    delta: np.ndarray
    p: np.ndarray
    """Raw p of the family's test (single-seed arms at their audit's own bound)."""
    p_adj: np.ndarray
    """Corrected p (1 where Dunnett's first step cannot reach α: never declared at α′ ≤ α)."""
    plain_adj: np.ndarray
    """Corrected p with single-seed arms at the pooled prediction t: the candidate test."""
    beyond: np.ndarray
    """|Δ| >= 2σ."""
    single: np.ndarray
    """(m,) arms with one seed."""
    bounds: np.ndarray
    """Each multi-seed arm's upper bound on its σ ratio (NaN for single-seed arms)."""
    bound: np.ndarray
    """(B,) the single-seed bound used (∞ with no multi-seed arm)."""

    def declared(self, level: np.ndarray | float) -> np.ndarray:
        """(B, m) arms declared improver/regressor at the audits' levels."""
        return self.beyond & (self.p_adj < np.reshape(level, (-1, 1)))

    def candidates(self, level: np.ndarray | float) -> np.ndarray:
        """(B, m) single-seed arms labelled candidate-* at the audits' levels."""
        level = np.reshape(level, (-1, 1))
        return self.single & self.beyond & (self.plain_adj < level) & ~(self.p_adj < level)

    def declaring_level(self, null_from: int = 0) -> np.ndarray:
        """(B,) the smallest level at which the audit declares a null arm (∞: none beyond 2σ)."""
        p = np.where(self.beyond, self.p_adj, np.inf)[:, null_from:]
        return p.min(axis=1) if p.shape[1] else np.full(len(p), np.inf)

    @staticmethod
    def join(parts: Sequence[Outcomes]) -> Outcomes:
        fields = ("delta", "p", "p_adj", "plain_adj", "beyond", "bounds", "bound")
        joined = {f: np.concatenate([getattr(o, f) for o in parts]) for f in fields}
        return Outcomes(single=parts[0].single, **joined)


def draws_per_audit(design: AuditDesign) -> int:
    return design.baseline_seeds + sum(design.anchor_seeds) + sum(design.arm_seeds)


def affordable(design: AuditDesign, audits: int) -> int:
    """`audits`, or fewer when they would draw more than `DRAW_BUDGET` seed values."""
    return min(audits, DRAW_BUDGET // draws_per_audit(design))


def simulate_outcomes(
    design: AuditDesign,
    audits: int,
    seed: int,
    noise: NoiseModel = NORMAL,
    effect: float = 0.0,
    effect_arms: int = 0,
    candidates: bool = True,
) -> Outcomes:
    """`audits` simulated audits of `design` under `noise`, reproducible from `seed`, with
    `effect` σ added to the first `effect_arms` arms; drawn in chunks of `CHUNK_DRAWS` values.
    `candidates=False` skips the candidate test (a calibration needs only the declaring level)."""
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_DRAWS // draws_per_audit(design))
    return Outcomes.join(
        [
            _chunk(
                design, min(chunk, audits - start), (effect, effect_arms), rng, noise, candidates
            )
            for start in range(0, audits, chunk)
        ]
    )


def arm_sigmas(design: AuditDesign, noise: NoiseModel, effect_arms: int) -> np.ndarray:
    """(m,) each arm's seed σ: `hetero`'s wide arms are the first null arms (the fewest seeds,
    the hardest case); a profile's are the first null arms with >= 2 seeds (what it measured)."""
    sigmas = np.ones(design.m)
    null = np.arange(effect_arms, design.m)
    if noise.spec.startswith("profile:"):
        null = null[np.asarray(design.arm_seeds)[null] >= 2]
    sigmas[null] = noise.arm_sigmas(len(null))[::-1]
    return sigmas


def _chunk(
    design: AuditDesign,
    audits: int,
    planted: tuple[float, int],
    rng: np.random.Generator,
    noise: NoiseModel,
    candidates: bool,
) -> Outcomes:
    effect, effect_arms = planted
    base = noise.draw_baseline(rng, (audits, design.baseline_seeds))
    anchors = [noise.draw(rng, (audits, n)) for n in design.anchor_seeds]
    sigmas = arm_sigmas(design, noise, effect_arms)
    shift = np.zeros(design.m)
    shift[:effect_arms] = effect
    n_arm = np.array(design.arm_seeds)
    groups = []
    for n, count in sorted(Counter(design.arm_seeds).items()):
        columns = np.flatnonzero(n_arm == n)
        draws = noise.draw(rng, (audits, count, n)) * sigmas[columns][None, :, None]
        groups.append(draws + shift[columns][None, :, None])
    return family_outcomes(design, base, anchors, groups, candidates)


def family_outcomes(
    design: AuditDesign,
    base: np.ndarray,
    anchors: Sequence[np.ndarray],
    groups: Sequence[np.ndarray],
    candidates: bool = True,
) -> Outcomes:
    """The verdict arithmetic on given seed values: (B, n₀) baseline, (B, nₐ) per anchor, and
    per distinct seed count n of the design's arms (ascending) a (B, arms with n seeds, n)."""
    n_base = design.baseline_seeds
    base_mean, base_var = base.mean(axis=1), base.var(axis=1, ddof=1)
    multi = [values.var(axis=2, ddof=1) for values in groups if values.shape[2] >= 2]
    sum_squares = base_var * (n_base - 1)
    for values in anchors:
        sum_squares = sum_squares + values.var(axis=1, ddof=1) * (values.shape[1] - 1)
    for values, var in zip([g for g in groups if g.shape[2] >= 2], multi, strict=True):
        sum_squares = sum_squares + var.sum(axis=1) * (values.shape[2] - 1)
    arm_var = np.concatenate(
        [
            values.var(axis=2, ddof=1)
            if values.shape[2] >= 2
            else np.full(values.shape[:2], np.nan)
            for values in groups
        ],
        axis=1,
    )
    n_arm = np.array(design.arm_seeds)
    dof = design.sigma_dof
    sigma = np.sqrt(sum_squares / dof)[:, None]
    delta = np.concatenate([values.mean(axis=2) for values in groups], axis=1) - base_mean[:, None]
    bounds = ratio_bounds(arm_var, sigma, n_arm, dof)
    bound = single_seed_bound(bounds)
    spread = Spread(n_arm, n_base, sigma, dof, arm_var, base_var[:, None], bound[:, None])
    stat, _, p = statistical_test(design.test).statistics(delta, spread)
    single = n_arm < 2
    plain_adj = np.ones_like(p)
    if single.any() and candidates:
        pooled = Spread(n_arm, n_base, sigma, dof)
        plain_stat, _, plain = statistical_test(Test.POOLED_T).statistics(delta, pooled)
        plain = np.where(single, plain, p)
        plain_stat = np.where(single, plain_stat, stat)
        plain_adj = _corrected(design, plain_stat, plain)
    return Outcomes(
        delta=delta,
        p=p,
        p_adj=_corrected(design, stat, p),
        plain_adj=plain_adj,
        beyond=np.asarray(~within_noise(delta, sigma)),
        single=single,
        bounds=bounds,
        bound=bound,
    )


def _corrected(design: AuditDesign, stat: np.ndarray, p: np.ndarray) -> np.ndarray:
    if design.correction != "dunnett":
        return adjust_pvalues(p, design.correction)
    statistic = statistical_test(design.test).dunnett_statistic(stat, p, design.sigma_dof)
    return _dunnett_adjusted(statistic, design)


def _dunnett_adjusted(stat: np.ndarray, design: AuditDesign) -> np.ndarray:
    """Dunnett's step-down corrected p where it is below α (1 elsewhere: no level α′ ≤ α
    declares such an arm, so its exact p_adj is never needed), row by row from the largest |t|,
    stopping at the first step whose tail reaches α."""
    n_arm = np.asarray(design.arm_seeds)
    n_base, dof = design.baseline_seeds, design.sigma_dof
    first = critical_value(design.alpha, list(n_arm), n_base, dof)
    size = np.abs(np.nan_to_num(stat))
    adjusted = np.ones(stat.shape)
    rows = np.flatnonzero(size.max(axis=1) >= first)
    order = np.argsort(-size[rows], axis=1, kind="stable")
    tails = max_t_tails(size[rows, order[:, 0]], n_arm, n_base, dof)  # every row's first step
    for row, arms, tail in zip(rows, order, tails, strict=True):
        running = tail
        for k, arm in enumerate(arms):
            if k:
                tail = max_t_tail(size[row, arm], n_arm[arms[k:]], n_base, dof)
                running = max(running, tail)
            if running >= design.alpha:
                break
            adjusted[row, arm] = running
    return adjusted
