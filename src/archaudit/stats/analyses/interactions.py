"""Factorial interactions and the "harmful count" model (OlmPool, 2026; docs/protocol.md).

An audit is factorial when its arm names are combinations of binary choices joined by a
separator, e.g. `qk_norm+gqa` (the baseline is the combination with no choice on).

The interaction of a combination S of k >= 2 choices is its classical factorial contrast over
the 2^k cells T ⊆ S (every choice outside S off), in ±1 coding:

    I_S = Σ_{T ⊆ S} (−1)^{k − |T|} · ȳ_T        2×2: I = y₁₁ − y₁₀ − y₀₁ + y₀₀

the sum of the cell means, each signed by the product of its choices' codes (+1 on, −1 off).
It is what the combination does beyond adding its sub-combinations' effects, oriented so that
positive = better. Its standard error is σ·√(Σ_T 1/n_T) with σ the seed noise pooled over every
cell with two or more seeds (the within-cell residual of the cell-means model, df = Σ(n_T − 1)),
and it is tested with Student's t on those degrees of freedom. The p-values are corrected over
the combinations tested (Holm unless the options name another correction). A combination with
a sub-cell that was not run has no contrast (NaN).

The additive model predicts each combination's mean from one main effect per choice (least
squares on the cell means); the harmful-count model instead predicts the metric from how many
harmful choices (those with a worse-than-baseline main effect) are on, and its R² is compared
with the additive model's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import NamedTuple

import numpy as np
import scipy.stats

from archaudit.errors import ConfigError
from archaudit.names import ResultStatus
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.inference.corrections import adjust_pvalues
from archaudit.stats.inference.noise import pooled_sd
from archaudit.stats.inference.samples import ArmSample
from archaudit.stats.judging.judgement import collect_family
from archaudit.stats.records.errors import DesignError
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import TableLike, load_table


@dataclass(frozen=True)
class CombinationEffect(JsonResult):
    """One combination: observed mean, additive prediction and its interaction contrast."""

    arm: str
    factors: tuple[str, ...]
    n_seeds: int
    observed: float
    predicted: float
    """The additive model's mean, in the metric's own units."""
    interaction: float
    """The classical contrast I_S (positive = better); NaN with fewer than 2 choices or a
    missing sub-cell."""
    interaction_sigmas: float
    """I_S / σ."""
    se: float
    """σ·√(Σ 1/n_T) over the 2^k cells of the contrast."""
    t: float
    df: int
    p: float
    """Two-sided Student-t p-value of I_S = 0."""
    p_adj: float
    """Adjusted over the combinations with a contrast (Holm unless the options say otherwise)."""
    harmful_count: int


@dataclass(frozen=True)
class Interactions(JsonResult):
    """Additive fit, interaction contrasts and the harmful-count regression on arm means."""

    metric: str
    scale: str
    baseline: str
    sigma: float
    """Seed noise pooled over every cell with two or more seeds."""
    sigma_dof: int
    main_effects: dict[str, float]
    """Each choice's additive effect, positive = better."""
    harmful: tuple[str, ...]
    r2_additive: float
    r2_harmful_count: float
    combinations: tuple[CombinationEffect, ...]
    notes: tuple[str, ...]

    @property
    def main_sigmas(self) -> dict[str, float]:
        """Each choice's additive effect in σ (the heatmap's diagonal)."""
        return {factor: effect / self.sigma for factor, effect in self.main_effects.items()}


def interactions(
    table: TableLike,
    metric: str,
    options: JudgeOptions = DEFAULT,
    *,
    separator: str = "+",
) -> Interactions:
    """Interaction contrasts, the additive fit and the harmful-count fit at one scale.

    `options` chooses the family (baseline, scale, direction, arms) and the correction of the
    contrasts' p-values (Holm by default; Dunnett's many-to-one test does not apply to them).
    """
    table = load_table(table)
    family = collect_family(table, metric, options)
    samples = [family.baseline, *(s for s in family.arms if s.status == ResultStatus.OK)]
    present, factors, design = _additive_design(table.source, samples, separator)
    # Oriented so that positive = better; reported means stay in the metric's own units.
    means = np.array([s.mean for s in samples])
    better = family.sign * means
    coefficients, fitted, r2_additive = _least_squares(design, better)
    main_effects = dict(zip(factors, coefficients[1:].tolist(), strict=True))
    harmful = tuple(f for f in factors if main_effects[f] < 0)
    counts = np.array([sum(f in combo for f in harmful) for combo in present])
    _, _, r2_count = _least_squares(np.column_stack([np.ones(len(counts)), counts]), better)
    sigma, dof = pooled_sd([s.values for s in samples if len(s.values) > 1])
    cells = dict(zip(present, samples, strict=True))
    contrasts = [_contrast(combo, cells, family.sign, sigma, dof) for combo in present]
    p_adj = _adjusted([c.p for c in contrasts], options.correction)
    combined = tuple(
        CombinationEffect(
            arm=sample.arm,
            factors=tuple(sorted(combo)),
            n_seeds=len(sample.values),
            observed=float(means[i]),
            predicted=float(family.sign * fitted[i]),
            interaction=contrasts[i].value,
            interaction_sigmas=contrasts[i].value / sigma,
            se=contrasts[i].se,
            t=contrasts[i].t,
            df=dof,
            p=contrasts[i].p,
            p_adj=p_adj[i],
            harmful_count=int(counts[i]),
        )
        for i, (sample, combo) in enumerate(zip(samples, present, strict=True))
    )
    return Interactions(
        metric=metric,
        scale=family.scale,
        baseline=options.baseline,
        sigma=sigma,
        sigma_dof=dof,
        main_effects=main_effects,
        harmful=harmful,
        r2_additive=r2_additive,
        r2_harmful_count=r2_count if np.ptp(counts) > 0 else math.nan,
        combinations=combined,
        notes=_missing_note(combined),
    )


def _additive_design(
    source: str, samples: list[ArmSample], separator: str
) -> tuple[list[frozenset[str]], list[str], np.ndarray]:
    """Each sample's choices (the baseline first, with none), the choices, and the design
    matrix of the additive model (intercept, one column per choice). A `DesignError` when the
    arms do not identify it plus at least one interaction."""
    present = [
        frozenset(s.arm.split(separator)) if i else frozenset() for i, s in enumerate(samples)
    ]
    factors = sorted(set().union(*present))
    design = np.array([[1.0] + [f in combo for f in factors] for combo in present])
    if (
        len(factors) < 2
        or len(samples) <= len(factors) + 1
        or (np.linalg.matrix_rank(design) < len(factors) + 1)
    ):
        raise DesignError(
            source,
            f"arms {[s.arm for s in samples]} do not identify an additive model of "
            f"{len(factors)} choices plus interactions",
            f"name arms as choices joined by {separator!r} (e.g. a{separator}b) and run every "
            "single choice plus at least one combination",
        )
    return present, factors, design


def _adjusted(p: list[float], correction: str) -> list[float]:
    """Adjusted p-values over the contrasts that have one (NaN for the rest)."""
    if correction == "dunnett":
        raise ConfigError(
            "interaction contrasts are not comparisons with the baseline, so dunnett does not "
            "apply: pass holm, bonferroni, bh or none"
        )
    tested = [i for i, value in enumerate(p) if not math.isnan(value)]
    adjusted = dict(zip(tested, adjust_pvalues([p[i] for i in tested], correction), strict=True))
    return [float(adjusted.get(i, math.nan)) for i in range(len(p))]


def _missing_note(combinations: tuple[CombinationEffect, ...]) -> tuple[str, ...]:
    """A note naming the combinations without a contrast because a sub-combination is missing."""
    missing = [c.arm for c in combinations if len(c.factors) > 1 and math.isnan(c.interaction)]
    if not missing:
        return ()
    return (
        "no interaction contrast where a sub-combination was not run (or did not finish): "
        + ", ".join(missing),
    )


class _Contrast(NamedTuple):
    value: float
    se: float
    t: float
    p: float


_UNDEFINED = _Contrast(math.nan, math.nan, math.nan, math.nan)


def _contrast(
    combo: frozenset[str],
    cells: dict[frozenset[str], ArmSample],
    sign: float,
    sigma: float,
    dof: int,
) -> _Contrast:
    """I_S with its standard error and t test; undefined below 2 choices or with a missing cell."""
    subsets = [frozenset(s) for r in range(len(combo) + 1) for s in combinations(sorted(combo), r)]
    if len(combo) < 2 or any(s not in cells for s in subsets):
        return _UNDEFINED
    value = sign * sum((-1) ** (len(combo) - len(s)) * cells[s].mean for s in subsets)
    se = sigma * math.sqrt(sum(1.0 / len(cells[s].values) for s in subsets))
    t = value / se
    return _Contrast(value, se, t, float(2 * scipy.stats.t.sf(abs(t), dof)))


def _least_squares(design: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Coefficients, fitted values and R² of an ordinary least-squares fit."""
    coefficients, *_ = np.linalg.lstsq(design, y, rcond=None)
    fitted = design @ coefficients
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum((y - fitted) ** 2)) / total if total > 0 else math.nan
    return coefficients, fitted, r2
