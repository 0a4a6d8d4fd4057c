"""The false discovery rate of a design, measured: what Benjamini–Hochberg controls.

BH (`correction="bh"`) bounds the expected share of false verdicts among the significant ones,
E[V / max(R, 1)], not the chance of any false verdict. With every arm null the two are equal,
and there BH's FDR is at its largest; once some arms are real, BH lets more null arms through:
with 10 of 19 arms at 10σ its family-wise rate on the 9 null arms is about twice α, while its
FDR stays below α. `fdr_simulation` measures both on the verdict arithmetic of
`simulate_null` (same draws, same tests, corrections and 2σ rule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.simulate import binomial_se, judged


@dataclass(frozen=True)
class FdrSimulation(JsonResult):
    """The error rates of a design with `effect_arms` arms carrying a true effect."""

    design: AuditDesign
    effect: float
    """The planted effect in σ (positive = better)."""
    effect_arms: int
    audits: int
    seed: int
    fdr: float
    """Mean over audits of (null arms declared) / max(arms declared, 1)."""
    fdr_se: float
    fwer_null: float
    """Share of audits with >= 1 null arm declared: the family-wise rate BH does not bound."""
    fwer_null_se: float
    found_rate: float
    """Share of planted arms declared improvers (NaN without planted arms)."""


def fdr_simulation(
    design: AuditDesign,
    *,
    effect: float = 0.0,
    effect_arms: int = 0,
    audits: int = 4000,
    seed: int = 0,
) -> FdrSimulation:
    """Simulate `audits` audits of `design` (reproducible from `seed`) with `effect` σ added to
    its first `effect_arms` arms, and measure the FDR and the family-wise rate on the rest."""
    outcomes, level = judged(design, audits, seed, effect=effect, effect_arms=effect_arms)
    declared, delta = outcomes.declared(level), outcomes.delta
    false = declared[:, effect_arms:]
    share = false.sum(axis=1) / np.maximum(declared.sum(axis=1), 1)
    any_false = np.any(false, axis=1)
    found = declared[:, :effect_arms] & (delta[:, :effect_arms] > 0)
    return FdrSimulation(
        design=design,
        effect=effect,
        effect_arms=effect_arms,
        audits=audits,
        seed=seed,
        fdr=float(share.mean()),
        fdr_se=float(share.std(ddof=1) / math.sqrt(audits)) if audits > 1 else math.nan,
        fwer_null=float(any_false.mean()),
        fwer_null_se=binomial_se(float(any_false.mean()), audits),
        found_rate=float(found.mean()) if effect_arms else math.nan,
    )
