"""Stability under a learning-rate sweep (docs/stability.md): the measures and the verdict.

Wortsman et al. 2023 (arXiv 2309.14322, §2.2) summarise how a model tolerates its learning rate
by the **LR sensitivity**: over a grid of rates η, E_η[min(L(η), L₀) − L*], where L(η) is the
final loss at rate η, L₀ the loss at initialisation and L* the best loss over the grid. A
diverged run counts as L₀ (min with L₀ clamps it). Here the expectation is the mean over the
sweep's grid and L(η) the mean over seeds at that rate.

A run is **stable** when it did not diverge (NaN/Inf), raised no rising-gradient warning, and
did not collapse (the stress test's reader decides; `audit/stress.py`: it ended below the
unigram loss). The **largest stable rate** of a seed is the largest rate of the grid up to which
every one of that seed's runs was stable; the arm's is their lower median (a rate of the
grid), with the seeds' range.

The **verdict** compares an arm with the baseline on both measures, with tests that are exact
under the null "at every rate, the arm's runs and the baseline's are exchangeable" (each rate
is a stratum of independent runs):

- sensitivity: a stratified randomisation test of ΔS = S(arm) − S(baseline), shuffling the
  arm/baseline labels among the runs of each rate (`permutations` Monte-Carlo draws);
- stability: the exact stratified test of the number of the arm's unstable runs (a sum of
  hypergeometrics, one per rate; the conditional test behind Cochran–Mantel–Haenszel).

Both p-values of every arm form one family, corrected by Holm (family-wise error α, 0.05 by
default). An arm is `more-fragile` when a corrected test says it is worse (higher sensitivity
or more unstable runs) and none says better, `more-robust` in the mirror case, `within-noise`
otherwise, and `not estimable` when a rate lacks two runs of the arm or of the baseline.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from archaudit.stats.inference.corrections import adjust_pvalues, error_rate

MORE_FRAGILE, MORE_ROBUST = "more-fragile", "more-robust"
WITHIN_NOISE, NOT_ESTIMABLE = "within-noise", "not estimable"
STABILITY_VERDICTS = (MORE_FRAGILE, MORE_ROBUST, WITHIN_NOISE, NOT_ESTIMABLE)
PERMUTATIONS = 4999


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep, as the stress test reads it back."""

    arm: str
    lr: float
    seed: int
    initial_loss: float
    """The loss of the first logged step: L₀, the loss at initialisation."""
    final_loss: float | None
    """The final validation loss; None when the run diverged or failed."""
    stable: bool
    break_step: int | None = None
    """The first step at which it diverged, warned of a rising gradient norm, or rose back above
    its initial loss; None for a run that stayed stable."""
    layers: int = 0

    @property
    def clamped(self) -> float:
        """min(L(η), L₀): a diverged run counts as its initial loss."""
        if self.final_loss is None or not math.isfinite(self.final_loss):
            return self.initial_loss
        return min(self.final_loss, self.initial_loss)


@dataclass(frozen=True)
class ArmStability:
    """One arm's measures over its sweep, with intervals over seeds."""

    arm: str
    lrs: tuple[float, ...]
    mean_loss: tuple[float, ...]
    """Per rate: the seeds' mean of min(L(η), L₀)."""
    sensitivity: float
    sensitivity_interval: tuple[float, float]
    """95% interval of the plug-in contrast (seed noise pooled over rates, t with its df)."""
    largest_stable_lr: float | None
    """The lower median over seeds of each seed's largest stable rate (a rate of the grid);
    None when no run was stable."""
    largest_stable_range: tuple[float | None, float | None]
    """The seeds' smallest and largest value of it."""
    best_lr: float
    unstable: tuple[int, ...]
    """Per rate: how many of its runs were unstable."""
    runs: tuple[int, ...]
    """Per rate: how many runs it has."""
    break_steps: tuple[tuple[int | None, ...], ...]
    """Per rate: each seed's break step (None = stable)."""
    seeds: int


@dataclass(frozen=True)
class StabilityVerdict:
    """An arm against the baseline on both measures, corrected over the family of arms."""

    arm: str
    baseline: str
    sensitivity_delta: float
    """S(arm) − S(baseline): positive = more sensitive to the learning rate (worse)."""
    unstable_delta: int
    """The arm's unstable runs minus the baseline's over the grid."""
    p_sensitivity: float | None
    p_stability: float | None
    p_sensitivity_adjusted: float | None
    p_stability_adjusted: float | None
    verdict: str
    alpha: float
    correction: str
    error_rate: str
    """What the correction controls over the family (FWER for Holm)."""


@dataclass(frozen=True)
class Sweep:
    """An arm's runs grouped by rate (ascending): `by_rate[i]` are the runs at `lrs[i]`."""

    arm: str
    lrs: tuple[float, ...]
    by_rate: tuple[tuple[SweepRun, ...], ...] = field(default=())

    @classmethod
    def of(cls, arm: str, runs: Sequence[SweepRun]) -> Sweep:
        lrs = tuple(sorted({r.lr for r in runs}))
        grouped = tuple(tuple(sorted((r for r in runs if r.lr == lr), key=_seed)) for lr in lrs)
        return cls(arm, lrs, grouped)

    def clamped(self) -> list[np.ndarray]:
        return [np.array([r.clamped for r in runs]) for runs in self.by_rate]


def _seed(run: SweepRun) -> int:
    return run.seed


def sensitivity(curve: Sequence[float] | np.ndarray) -> float:
    """E_η[L(η)] − min_η L(η) of a curve already clamped at L₀ (Wortsman et al. 2023)."""
    values = np.asarray(curve, dtype=float)
    return float(values.mean() - values.min())


def log_slope(values: Sequence[float]) -> float:
    """Least-squares slope of ln(value) per step over consecutive steps (NaN for < 2 values)."""
    if len(values) < 2:
        return math.nan
    y = np.log(np.asarray(values, dtype=float))
    return float(np.polyfit(np.arange(len(y), dtype=float), y, 1)[0])


def measure(sweep: Sweep, confidence: float = 0.95) -> ArmStability:
    """The arm's sensitivity, largest stable rate, best rate and break steps."""
    losses = sweep.clamped()
    means = np.array([v.mean() for v in losses])
    best = int(np.argmin(means))
    s = sensitivity(means)
    half = _contrast_half_width(losses, best, confidence)
    per_seed = _largest_stable_per_seed(sweep)
    stable = [lr for lr in per_seed if lr is not None]
    return ArmStability(
        arm=sweep.arm,
        lrs=sweep.lrs,
        mean_loss=tuple(float(m) for m in means),
        sensitivity=s,
        sensitivity_interval=(s - half, s + half),
        largest_stable_lr=statistics.median_low(stable) if stable else None,
        largest_stable_range=(min(stable, default=None), max(stable, default=None)),
        best_lr=sweep.lrs[best],
        unstable=tuple(sum(not r.stable for r in runs) for runs in sweep.by_rate),
        runs=tuple(len(runs) for runs in sweep.by_rate),
        break_steps=tuple(tuple(r.break_step for r in runs) for runs in sweep.by_rate),
        seeds=min(len(runs) for runs in sweep.by_rate),
    )


def _contrast_half_width(losses: list[np.ndarray], best: int, confidence: float) -> float:
    """S = Σ c_η·L̄(η), c = 1/R − [η = best]: its SE from the seed variance pooled over
    rates, times the t quantile with the pooled df (NaN without replicated rates)."""
    dof = sum(len(v) - 1 for v in losses)
    if dof < 1:
        return math.nan
    pooled = sum(float(((v - v.mean()) ** 2).sum()) for v in losses) / dof
    c = np.full(len(losses), 1.0 / len(losses))
    c[best] -= 1.0
    se = math.sqrt(pooled * sum(ci**2 / len(v) for ci, v in zip(c, losses, strict=True)))
    return float(sps.t.ppf(0.5 + confidence / 2, dof) * se)


def _largest_stable_per_seed(sweep: Sweep) -> list[float | None]:
    """Per seed, the largest rate up to which every rate of the grid was stable."""
    seeds = sorted({r.seed for runs in sweep.by_rate for r in runs})
    out: list[float | None] = []
    for seed in seeds:
        largest = None
        for lr, runs in zip(sweep.lrs, sweep.by_rate, strict=True):
            if not all(r.stable for r in runs if r.seed == seed):
                break
            largest = lr
        out.append(largest)
    return out


def sensitivity_test(
    arm: Sweep, base: Sweep, permutations: int = PERMUTATIONS, seed: int = 0
) -> tuple[float, float]:
    """(ΔS, two-sided p) of the stratified randomisation test: the labels are shuffled among
    the runs of each rate. The p-value counts the observed split: (1 + #|ΔS*| ≥ |ΔS|)/(1 + N)."""
    a, b = arm.clamped(), base.clamped()
    observed = sensitivity([x.mean() for x in a]) - sensitivity([y.mean() for y in b])
    rng = np.random.default_rng(seed)
    left, right = [], []
    for x, y in zip(a, b, strict=True):
        pooled = np.concatenate((x, y))
        order = rng.random((permutations, len(pooled))).argsort(axis=1)
        shuffled = pooled[order]  # (N, n): each row one relabelling of this rate's runs
        left.append(shuffled[:, : len(x)].mean(axis=1))
        right.append(shuffled[:, len(x) :].mean(axis=1))
    draws = _sensitivities(np.stack(left, 1)) - _sensitivities(np.stack(right, 1))
    extreme = int(np.sum(np.abs(draws) >= abs(observed) - 1e-12))
    return observed, (1 + extreme) / (1 + permutations)


def _sensitivities(curves: np.ndarray) -> np.ndarray:
    """`sensitivity` of every row of a (N, rates) array."""
    return curves.mean(axis=1) - curves.min(axis=1)


def stability_test(arm: Sweep, base: Sweep) -> tuple[int, float]:
    """(the arm's unstable runs − the baseline's, two-sided exact p) of two sweeps."""
    return unstable_test(*_counts(arm), *_counts(base))


def _counts(sweep: Sweep) -> tuple[list[int], list[int]]:
    return [sum(not r.stable for r in runs) for runs in sweep.by_rate], [
        len(runs) for runs in sweep.by_rate
    ]


def unstable_test(
    k_a: Sequence[int], n_a: Sequence[int], k_b: Sequence[int], n_b: Sequence[int]
) -> tuple[int, float]:
    """Unstable runs k of n per rate of two arms: (Σk_a − Σk_b, two-sided exact p). Given each
    rate's total of unstable runs, the arm's count at that rate is hypergeometric under the
    null; their sum is the convolution. Two-sided: the outcomes no likelier than the observed."""
    dist = np.ones(1)
    for ka, na, kb, nb in zip(k_a, n_a, k_b, n_b, strict=True):
        dist = np.convolve(dist, _hypergeom(na, nb, ka + kb))
    observed = sum(k_a)
    p = float(dist[dist <= dist[observed] * (1 + 1e-9)].sum())
    return observed - sum(k_b), min(1.0, p)


def _hypergeom(n_a: int, n_b: int, total: int) -> np.ndarray:
    """P(k of `total` marked runs fall among the arm's n_a), k = 0..n_a."""
    ways = [
        math.comb(n_a, k) * math.comb(n_b, total - k) if total - k >= 0 else 0
        for k in range(n_a + 1)
    ]
    return np.array(ways, dtype=float) / math.comb(n_a + n_b, total)


def estimable(arm: Sweep, base: Sweep) -> bool:
    """Both sweeps cover the same rates with at least two runs at each."""
    if arm.lrs != base.lrs or len(arm.lrs) < 2:
        return False
    return all(len(runs) >= 2 for sweep in (arm, base) for runs in sweep.by_rate)


def judge_stability(
    sweeps: Mapping[str, Sweep],
    baseline: str,
    *,
    alpha: float = 0.05,
    correction: str = "holm",
    permutations: int = PERMUTATIONS,
) -> list[StabilityVerdict]:
    """Every arm but the baseline against it; one family of 2 tests per estimable arm."""
    base = sweeps[baseline]
    arms = [a for a in sweeps if a != baseline]
    tests: dict[str, tuple[float, float, int, float]] = {}
    for arm in arms:
        if estimable(sweeps[arm], base):
            ds, ps = sensitivity_test(sweeps[arm], base, permutations)
            du, pu = stability_test(sweeps[arm], base)
            tests[arm] = (ds, ps, du, pu)
    flat = [p for ds, ps, du, pu in tests.values() for p in (ps, pu)]
    adjusted = iter(adjust_pvalues(flat, correction)) if flat else iter(())
    out = []
    for arm in arms:
        if arm not in tests:
            out.append(_not_estimable(arm, baseline, alpha, correction))
            continue
        ds, ps, du, pu = tests[arm]
        aps, apu = float(next(adjusted)), float(next(adjusted))
        worse = (aps < alpha and ds > 0) or (apu < alpha and du > 0)
        better = (aps < alpha and ds < 0) or (apu < alpha and du < 0)
        verdict = MORE_FRAGILE if worse and not better else WITHIN_NOISE
        verdict = MORE_ROBUST if better and not worse else verdict
        out.append(
            StabilityVerdict(
                arm,
                baseline,
                ds,
                du,
                ps,
                pu,
                aps,
                apu,
                verdict,
                alpha,
                correction,
                error_rate(correction),
            )
        )
    return out


def _not_estimable(arm: str, baseline: str, alpha: float, correction: str) -> StabilityVerdict:
    return StabilityVerdict(
        arm,
        baseline,
        math.nan,
        0,
        None,
        None,
        None,
        None,
        NOT_ESTIMABLE,
        alpha,
        correction,
        error_rate(correction),
    )
