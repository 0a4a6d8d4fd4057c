"""The calibrated level of a fixed design: α′ ≤ α, set by simulation so that the whole rule holds
α over the noise panel and over the audit's own variance profile.

Welch with 1–2 df of its own is liberal when variances differ (2 arms × 2 seeds against 3
baseline seeds: 0.072 under hetero:6:3 at the nominal α), and no fixed bound knows how wide the
arms of a given audit are. So a design's corrected p-values are compared with a level α′ instead
of α:

- **the panel's level.** Each simulated null audit has a *declaring level* q: the smallest
  corrected p of its arms beyond 2σ (it declares something exactly when q < α′). α′ is the
  largest level ≤ α whose rate, the share of audits with q < α′, is at most α minus two
  Monte-Carlo s.e. under every model of the panel (`PANEL`): the quantile of q, per model.
- **the audit's own profile.** Each multi-seed arm's seed σ relative to the noise floor has an
  upper confidence bound, σ-ratio / √F_{0.1}(n − 1, ν) (`ratio_bounds`). When some arm's bound
  passes the panel's widest (6×), the audit adds one more model, `profile:F:K`: K arms (its
  fewest-seed multi-seed arms) with seed σ × F, F the widest bound rounded up to a √2 grid; its
  level is calibrated the same way and α′ is the smaller of the two. The bound, not the point
  estimate, stands for the ratio's sampling uncertainty, so a bad draw of the profile is
  covered; and the rate of the whole procedure, the profile's estimation included, is what
  `simulate_null` measures (it looks up each simulated audit's own level).
- **the single-seed bound.** One seed cannot show its spread: it is judged as if its seed σ
  were the larger of 6× (the panel's widest) and that same widest bound; with no multi-seed arm
  nothing bounds it, and single-seed arms are candidates only.

Levels are cached per design (and profile key) in process and on disk, like the design rates.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from archaudit.stats.records.noise_panel import CALIBRATION_PANEL, NORMAL, parse_one
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.disk_cache import cached, in_range
from archaudit.stats.simulation.null_kernel import MIN_AUDITS, affordable, simulate_outcomes
from archaudit.stats.simulation.profile import NO_PROFILE, Profile, profile_levels, profile_of
from archaudit.stats.tests import statistical_test

CALIBRATION_AUDITS = 4000
"""Null audits per model behind a level (its rate's MC s.e. is 0.0034 at 0.05); more at small α
(`calibration_audits`)."""
CALIBRATION_SEED = 1
"""Not the design rate's seed 0: the rate printed beside a level is measured on fresh draws."""
CALIBRATION_VERSION = 4
"""4: the protected moderated Welch t and the panel beyond (issue 53)."""


def resolving(alpha: float) -> int:
    """The fewest null audits per model that resolve α − 2 MC s.e. (2 s.e. ≤ α/2)."""
    return math.ceil(16.0 * (1.0 - alpha) / alpha)


def calibration_audits(alpha: float) -> int:
    """Null audits per model behind a level: 4,000 down to α ≈ 0.004, enough to resolve α below
    (15,984 at α = 0.001; at 4,000 the target was 0 and α′ 1.3e-5, an MDE of 3,446σ)."""
    return max(CALIBRATION_AUDITS, resolving(alpha))


def unresolvable(design: AuditDesign) -> str:
    """Why `design`'s α cannot be calibrated within the draw budget ("" when it can)."""
    needed = resolving(design.alpha)
    audits = affordable(design, needed)
    if audits >= needed:
        return ""
    return (
        f"α = {design.alpha:g} needs {needed:,} null audits per model to resolve α − 2 s.e.; "
        f"this design's draws afford {audits:,}: not calibrated"
    )


def level_from_rates(q: np.ndarray, alpha: float) -> float:
    """The largest level ≤ α at which the share of audits with declaring level q below it is at
    most α minus two MC s.e. (so that a fresh measurement of the rate stays below α): an order
    statistic of q."""
    target = alpha - 2.0 * math.sqrt(alpha * (1.0 - alpha) / len(q))
    allowed = math.floor(target * len(q))
    ordered = np.sort(q)
    return float(min(alpha, ordered[allowed])) if allowed < len(q) else alpha


def calibrated(design: AuditDesign) -> bool:
    """Whether `design` gets a calibrated level: not the user's assumptions (pooled t, z), the
    FDR or no correction at all, nor a design too large to simulate (its rate says so)."""
    audits = affordable(design, calibration_audits(design.alpha))
    return (
        statistical_test(design.test).level_calibrated
        and design.correction not in ("bh", "none")
        and audits >= MIN_AUDITS
        and not unresolvable(design)
    )


@lru_cache(maxsize=256)
def level_shares(design: AuditDesign) -> tuple[tuple[float, float], ...]:
    """(α′, share) of the whole procedure's own levels over the calibration's null audits under
    normal noise: what a design's MDE is averaged over before its seeds are seen. A 2-seed arm's
    upper ratio bound passes 6× in about half of such audits, and the profile model's level is
    then lower (the moderated Welch t trusts σ² more than a wide arm deserves)."""
    if not calibrated(design):
        return ((design.alpha, 1.0),)
    audits = affordable(design, calibration_audits(design.alpha))
    outcomes = simulate_outcomes(design, audits, CALIBRATION_SEED, NORMAL, candidates=False)
    levels, counts = np.unique(audit_levels(design, outcomes.bounds), return_counts=True)
    return tuple(zip(levels.tolist(), (counts / counts.sum()).tolist(), strict=True))


@lru_cache(maxsize=1024)
def design_level(design: AuditDesign, profile: Profile = NO_PROFILE) -> float:
    """α′ of `design`: the panel's level, or with `profile`'s wide arms the profile model's."""
    audits = affordable(design, calibration_audits(design.alpha))
    if not calibrated(design):
        return design.alpha
    models = (
        [parse_one(name) for name in CALIBRATION_PANEL] if profile.arms == 0 else [profile.model()]
    )
    fields = {
        "design": design.to_dict(),
        "models": [m.spec for m in models],
        "audits": audits,
        "seed": CALIBRATION_SEED,
        "v": CALIBRATION_VERSION,
    }

    def simulate() -> float:
        return min(
            level_from_rates(
                simulate_outcomes(
                    design, audits, CALIBRATION_SEED, m, candidates=False
                ).declaring_level(),
                design.alpha,
            )
            for m in models
        )

    return cached("level", fields, simulate, lambda v: in_range(v, 0.0, design.alpha))


def audit_level(design: AuditDesign, bounds: np.ndarray) -> tuple[float, Profile]:
    """(α′, the profile model used) of one audit whose multi-seed arms show `bounds`."""
    profile = profile_of(bounds)
    return float(audit_levels(design, bounds[None, :])[0]), profile


def audit_levels(design: AuditDesign, bounds: np.ndarray) -> np.ndarray:
    """(B,) each simulated audit's own α′ from its (B, m) ratio bounds: the whole procedure."""
    return profile_levels(
        bounds, design_level(design), lambda profile: design_level(design, profile)
    )
