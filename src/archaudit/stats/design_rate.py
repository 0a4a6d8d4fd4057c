"""The measured family-wise error rate and the MDE of a design: printed on every verdict table.

The rate is simulated under the null (`simulate_null`) with a fixed seed, so it is the same
number every time; it depends only on the design, so it is cached in-process and on disk under
`<archaudit cache>/stats/`, keyed by the design, the number of audits, the seed and the
simulation's version.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache

from archaudit.files import atomic_write_text, cache_dir
from archaudit.stats.design import AuditDesign
from archaudit.stats.power import minimum_detectable_effect
from archaudit.stats.serialize import JsonResult
from archaudit.stats.simulate import binomial_se, simulate_null

DESIGN_AUDITS = 4000
"""Simulated audits per design: a Monte-Carlo standard error of 0.0034 at a rate of 0.05."""
DESIGN_SEED = 0
SIMULATION_VERSION = 1
"""Bump when the simulation's arithmetic changes, so that cached rates are recomputed."""


@dataclass(frozen=True)
class DesignRate(JsonResult):
    """How often this design declares a null arm significant, and what it can detect."""

    design: AuditDesign
    description: str
    fwer: float
    """Measured family-wise false-positive rate: share of null audits with >= 1 false verdict."""
    fwer_se: float
    audits: int
    seed: int
    above_alpha: bool
    """The rate exceeds α by more than two Monte-Carlo standard errors."""
    power_target: float
    mde_sigmas: float
    """Smallest true effect, in σ, that the design's smallest arm detects with `power_target`."""


def design_rate(
    design: AuditDesign,
    *,
    power_target: float = 0.8,
    audits: int = DESIGN_AUDITS,
    seed: int = DESIGN_SEED,
) -> DesignRate:
    """The design's measured family-wise error rate (cached) and its MDE."""
    fwer = _fwer(design, audits, seed)
    se = binomial_se(fwer, audits)
    return DesignRate(
        design=design,
        description=design.describe(),
        fwer=fwer,
        fwer_se=se,
        audits=audits,
        seed=seed,
        above_alpha=fwer > design.alpha + 2.0 * se,
        power_target=power_target,
        mde_sigmas=arm_mde(design, min(design.arm_seeds), power_target),
    )


@lru_cache(maxsize=256)
def arm_mde(design: AuditDesign, seeds: int, target: float = 0.8) -> float:
    """The MDE (in σ) of an arm of `design` with `seeds` seeds."""
    return minimum_detectable_effect(design.arm(seeds), target)


@lru_cache(maxsize=256)
def _fwer(design: AuditDesign, audits: int, seed: int) -> float:
    key = json.dumps(
        {"design": design.to_dict(), "audits": audits, "seed": seed, "v": SIMULATION_VERSION},
        sort_keys=True,
    )
    path = cache_dir() / "stats" / f"design-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    try:
        cached = json.loads(path.read_text())
        if cached.get("key") == key:
            return float(cached["fwer"])
    except (OSError, ValueError, KeyError):
        pass
    fwer = simulate_null(design=design, audits=audits, seed=seed).fwer
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"key": key, "fwer": fwer}))
    except OSError:
        pass  # a read-only cache only costs the simulation next time
    return fwer
