"""The measured family-wise error rate and the MDE of a design: printed on every verdict table.

The rate is simulated under the null (`simulate_null`) with a fixed seed, so it is the same
number every time: under normal noise with one σ (the model the verdict arithmetic is exact for)
and under every model of the noise panel (stats/noise_models.py), whose worst rate is printed
beside it. It depends only on the design, so it is cached in-process and on disk under
`<archaudit cache>/stats/`, keyed by the design, the number of audits, the seed and the
simulation's version. A design too large to simulate within `DRAW_BUDGET` draws per noise model
(e.g. 1000 arms × 1000 seeds) is simulated with fewer audits, down to `MIN_AUDITS`; below that it
is not simulated and says why.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from functools import lru_cache

from archaudit.files import atomic_write_text, cache_dir
from archaudit.stats.design import AuditDesign
from archaudit.stats.noise_models import NORMAL, PANEL, parse_one
from archaudit.stats.power import minimum_detectable_effect
from archaudit.stats.serialize import JsonResult
from archaudit.stats.simulate import (
    PanelRate,
    binomial_se,
    draws_per_audit,
    null_fwer,
    panel_rate,
    worst,
)

DESIGN_AUDITS = 4000
"""Simulated audits per design under normal noise: a Monte-Carlo s.e. of 0.0034 at 0.05."""
PANEL_AUDITS = 2000
"""Simulated audits per design and panel model: an s.e. of 0.0049 at 0.05."""
DRAW_BUDGET = 40_000_000
"""The most seed values one noise model's simulation of one design may draw (a few seconds)."""
MIN_AUDITS = 200
DESIGN_SEED = 0
SIMULATION_VERSION = 2
"""Bump when the simulation's arithmetic changes, so that cached rates are recomputed."""


@dataclass(frozen=True)
class DesignRate(JsonResult):
    """How often this design declares a null arm significant, and what it can detect."""

    design: AuditDesign
    description: str
    fwer: float
    """Measured family-wise false-positive rate under normal noise with one σ (NaN: skipped)."""
    fwer_se: float
    audits: int
    seed: int
    above_alpha: bool
    """The normal-model or the panel's worst rate exceeds α by more than two MC s.e."""
    power_target: float
    mde_sigmas: float
    """Smallest true effect, in σ, that the design's smallest arm detects with `power_target`."""
    panel_worst: PanelRate | None = None
    """The highest rate over the noise panel (None when skipped)."""
    skipped: str = ""
    """Why the rates were not simulated ("" when they were)."""

    def describe_rates(self) -> str:
        """E.g. "normal 0.036 ± 0.003, panel worst 0.509 ± 0.011 (hetero:6) — ABOVE α"."""
        if self.skipped:
            return f"error rate not simulated: {self.skipped}"
        text = f"normal noise {self.fwer:.3f} ± {self.fwer_se:.3f} ({self.audits} null audits)"
        worst_rate = self.panel_worst
        if worst_rate is not None:
            text += (
                f", noise panel's worst {worst_rate.fwer:.3f} ± {worst_rate.fwer_se:.3f} "
                f"({worst_rate.noise}, {worst_rate.audits} audits each)"
            )
        return text + (" — ABOVE α, verdicts do not hold" if self.above_alpha else "")


def design_rate(
    design: AuditDesign,
    *,
    power_target: float = 0.8,
    audits: int = DESIGN_AUDITS,
    seed: int = DESIGN_SEED,
) -> DesignRate:
    """The design's measured family-wise error rates (normal and panel, cached) and its MDE."""
    normal_audits, each = affordable(design, audits), affordable(design, PANEL_AUDITS)
    mde = arm_mde(design, min(design.arm_seeds), power_target)
    if normal_audits < MIN_AUDITS:
        reason = (
            f"{draws_per_audit(design):,} seed values per audit; fewer than {MIN_AUDITS} audits "
            f"fit the budget of {DRAW_BUDGET:,} draws"
        )
        return DesignRate(
            design=design,
            description=design.describe(),
            fwer=math.nan,
            fwer_se=math.nan,
            audits=0,
            seed=seed,
            above_alpha=False,
            power_target=power_target,
            mde_sigmas=mde,
            skipped=reason,
        )
    rates = _rates(design, normal_audits, each, seed)
    fwer = rates[NORMAL.spec]
    se = binomial_se(fwer, normal_audits)
    panel = tuple(
        panel_rate(rates[name], normal_audits if name == NORMAL.spec else each, design.alpha, name)
        for name in PANEL
    )
    worst_rate = worst(panel)
    return DesignRate(
        design=design,
        description=design.describe(),
        fwer=fwer,
        fwer_se=se,
        audits=normal_audits,
        seed=seed,
        above_alpha=fwer > design.alpha + 2.0 * se or bool(worst_rate and worst_rate.above_alpha),
        power_target=power_target,
        mde_sigmas=mde,
        panel_worst=worst_rate,
    )


def affordable(design: AuditDesign, audits: int) -> int:
    """`audits`, or fewer when they would draw more than `DRAW_BUDGET` seed values."""
    return min(audits, DRAW_BUDGET // draws_per_audit(design))


@lru_cache(maxsize=256)
def arm_mde(design: AuditDesign, seeds: int, target: float = 0.8) -> float:
    """The MDE (in σ) of an arm of `design` with `seeds` seeds."""
    return minimum_detectable_effect(design.arm(seeds), target)


@lru_cache(maxsize=256)
def _rates(design: AuditDesign, audits: int, panel_audits: int, seed: int) -> dict[str, float]:
    """Noise model → measured rate: "normal" at `audits`, the panel's at `panel_audits`."""
    key = json.dumps(
        {
            "design": design.to_dict(),
            "audits": audits,
            "panel": [panel_audits, *PANEL],
            "seed": seed,
            "v": SIMULATION_VERSION,
        },
        sort_keys=True,
    )
    path = cache_dir() / "stats" / f"design-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    try:
        cached = json.loads(path.read_text())
        if cached.get("key") == key:
            return {name: float(rate) for name, rate in cached["rates"].items()}
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    rates = {NORMAL.spec: null_fwer(design, audits, seed, NORMAL)}
    for name in PANEL:
        if name != NORMAL.spec:
            rates[name] = null_fwer(design, panel_audits, seed, parse_one(name))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"key": key, "rates": rates}))
    except OSError:
        pass  # a read-only cache only costs the simulation next time
    return rates
