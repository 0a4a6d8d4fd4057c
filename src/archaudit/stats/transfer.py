"""Cross-scale transfer: does an arm's effect at a small scale predict it at a larger one?

docs/protocol.md, Cross-scale transfer: sign preservation of Δ, Spearman ρ and Kendall τ of the arm
ranking with bootstrap intervals over seeds, the rank-shift table, and the arms that diverged
only at the larger scale.

The bootstrap resamples the seeds of every arm with several. A single-seed arm has nothing to
resample (and resampling the baseline shifts every Δ alike, leaving the ranking unchanged), so
its mean is drawn from N(mean, σ*²) instead, with σ*² = σ̂²·ν/χ²_ν drawn once per replicate and
scale: σ̂ from ν degrees of freedom is itself uncertain, and this scaled-inverse-χ² draw carries
that uncertainty into the interval. An interval whose replicates are all equal is reported as
not estimable (NaN, with a note), never as [ρ, ρ].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.stats.errors import DesignError
from archaudit.stats.judge import Judgement, collect_family, judge
from archaudit.stats.ranking import kendall_tau_b, rankdata, spearman
from archaudit.stats.resample import bootstrap_means, estimable_interval, varies
from archaudit.stats.serialize import JsonResult
from archaudit.stats.table import Table
from archaudit.stats.verdicts import DIVERGED, INCOMPLETE, WITHIN_NOISE

LOW_RHO = 0.5
"""Below this Spearman ρ the report says the small-scale ranking does not carry over."""


@dataclass(frozen=True)
class ArmTransfer(JsonResult):
    """One arm at both scales; rank 1 is the best arm."""

    arm: str
    delta_small: float
    delta_large: float
    sign_preserved: bool
    rank_small: float
    rank_large: float
    rank_shift: float
    """rank_large − rank_small: positive means the arm fell behind at the larger scale."""
    verdict_small: str
    verdict_large: str


@dataclass(frozen=True)
class ScaleTransfer(JsonResult):
    """How well the arm ranking at `small` carries to `large`."""

    metric: str
    baseline: str
    small: str
    large: str
    n_arms: int
    sign_preserved: float
    """Share of arms whose Δ keeps its sign."""
    spearman: float
    spearman_interval: tuple[float, float]
    kendall: float
    kendall_interval: tuple[float, float]
    n_boot: int
    seed: int
    parametric_arms: tuple[str, ...]
    """Single-seed arms (at either scale) drawn from N(mean, σ*²) in the bootstrap."""
    arms: tuple[ArmTransfer, ...]
    diverged_only_at_large: tuple[str, ...]
    notes: tuple[str, ...]


def cross_scale_transfer(
    table: Table,
    metric: str,
    *,
    baseline: str = "baseline",
    small: str | None = None,
    large: str | None = None,
    lower_is_better: bool = False,
    correction: str = "holm",
    alpha: float = 0.05,
    anchors: Sequence[str] = (),
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> ScaleTransfer:
    """Compare the arms' effects at two scales (default: the smallest and the largest)."""
    if len(table.scales) < 2:
        raise DesignError(
            f"{table.source} (column 'scale')",
            f"transfer needs two scales, the table has {len(table.scales)}",
            "train the arms at a second scale",
        )
    small = table.resolve_scale(small or table.scales[0])
    large = table.resolve_scale(large or table.scales[-1])
    options = dict(baseline=baseline, anchors=anchors, lower_is_better=lower_is_better)
    judged = {
        s: judge(table, metric, scale=s, correction=correction, alpha=alpha, **options)
        for s in (small, large)
    }
    verdicts = {s: {v.arm: v for v in judged[s].arms} for s in (small, large)}
    names = [
        arm
        for arm in verdicts[small]
        if arm in verdicts[large]
        and all(verdicts[s][arm].verdict not in (DIVERGED, INCOMPLETE) for s in (small, large))
    ]
    if len(names) < 3:
        raise DesignError(
            table.source,
            f"only {len(names)} arms finished at both {small!r} and {large!r}",
            "rank correlations need at least 3",
        )
    deltas = {s: np.array([verdicts[s][arm].delta for arm in names]) for s in (small, large)}
    ranks = {s: rankdata(-deltas[s]) for s in (small, large)}
    rng = np.random.default_rng(seed)
    boot = {
        s: _bootstrap_deltas(table, metric, s, names, options, n_boot, rng) for s in (small, large)
    }
    rho_boot = np.array([spearman(a, b) for a, b in zip(boot[small], boot[large], strict=True)])
    tau_boot = np.array(
        [kendall_tau_b(a, b) for a, b in zip(boot[small], boot[large], strict=True)]
    )
    rho = spearman(deltas[small], deltas[large])
    quiet = all(verdicts[s][arm].verdict == WITHIN_NOISE for s in (small, large) for arm in names)
    notes = _rank_notes(rho, estimable_interval(rho_boot, confidence), quiet, small, large)
    notes += [
        f"{name} interval not estimable: all {n_boot} bootstrap replicates gave "
        f"{name} = {replicates[0]:.3g}"
        for name, replicates in (("Spearman ρ", rho_boot), ("Kendall τ", tau_boot))
        if not varies(replicates)
    ]
    arms = tuple(
        ArmTransfer(
            arm=arm,
            delta_small=float(deltas[small][i]),
            delta_large=float(deltas[large][i]),
            sign_preserved=bool(np.sign(deltas[small][i]) == np.sign(deltas[large][i])),
            rank_small=float(ranks[small][i]),
            rank_large=float(ranks[large][i]),
            rank_shift=float(ranks[large][i] - ranks[small][i]),
            verdict_small=verdicts[small][arm].verdict,
            verdict_large=verdicts[large][arm].verdict,
        )
        for i, arm in enumerate(names)
    )
    return ScaleTransfer(
        metric=metric,
        baseline=baseline,
        small=small,
        large=large,
        n_arms=len(names),
        sign_preserved=float(np.mean([arm.sign_preserved for arm in arms])),
        spearman=rho,
        spearman_interval=estimable_interval(rho_boot, confidence),
        kendall=kendall_tau_b(deltas[small], deltas[large]),
        kendall_interval=estimable_interval(tau_boot, confidence),
        n_boot=n_boot,
        seed=seed,
        parametric_arms=tuple(
            arm for arm in names if any(verdicts[s][arm].n_seeds == 1 for s in (small, large))
        ),
        arms=arms,
        diverged_only_at_large=_diverged_only_at_large(judged[small], judged[large]),
        notes=tuple(notes),
    )


def _rank_notes(
    rho: float, interval: tuple[float, float], quiet: bool, small: str, large: str
) -> list[str]:
    """A rank change is claimed only when ρ's interval lies below LOW_RHO; when every arm is
    within noise at both scales, their order is noise and the ranking is not estimable."""
    if quiet:
        return [
            f"ranking not estimable: every arm is within noise at {small} and at {large}, so "
            f"their order (Spearman ρ = {rho:.2f}) is the order of noise"
        ]
    # an interval not estimable because every replicate gave the same ρ: ρ is that sure
    upper = interval[1] if np.isfinite(interval[1]) else rho
    if upper < LOW_RHO:
        return [
            f"Spearman ρ = {rho:.2f} (upper bound {upper:.2f}): the ranking at {small} is not "
            f"a ranking at {large}"
        ]
    if not rho >= LOW_RHO:  # low or undefined, but the interval does not exclude a kept order
        return [
            f"Spearman ρ = {rho:.2f}, but its interval reaches {LOW_RHO}: the data do not show "
            f"that the ranking changed from {small} to {large}"
        ]
    return []


def _bootstrap_deltas(
    table: Table,
    metric: str,
    scale: str,
    names: list[str],
    options: dict,
    n_boot: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """(n_boot, arms) matrix of Δ: seeds resampled within the baseline and every multi-seed arm,
    single-seed arms drawn from N(value, σ*²) with σ*² = σ̂²·ν/χ²_ν (see the module docstring)."""
    family = collect_family(table, metric, scale=scale, **options)
    samples = {sample.arm: sample for sample in family.arms}
    dof = family.noise.dof
    sigma = family.noise.sigma * np.sqrt(dof / rng.chisquare(dof, size=n_boot))
    base = bootstrap_means(family.baseline.values, n_boot, rng)

    def arm_means(values: np.ndarray) -> np.ndarray:
        if len(values) > 1:
            return bootstrap_means(values, n_boot, rng)
        return values[0] + sigma * rng.standard_normal(n_boot)

    return np.stack(
        [family.sign * (arm_means(samples[arm].values) - base) for arm in names], axis=1
    )


def _diverged_only_at_large(small: Judgement, large: Judgement) -> tuple[str, ...]:
    stable_small = {v.arm for v in small.arms if v.verdict != DIVERGED}
    return tuple(v.arm for v in large.arms if v.verdict == DIVERGED and v.arm in stable_small)
