"""Stability under a learning-rate sweep (docs/stability.md): the measures and the verdict.

Wortsman et al. 2023 (arXiv 2309.14322, §2.2) summarise how a model tolerates its learning rate
by the **LR sensitivity**: over a grid of rates η, E_η[min(L(η), L₀) − L*], where L(η) is the
final loss at rate η, L₀ the loss at initialisation and L* the best loss over the grid. A
diverged run counts as L₀ (min with L₀ clamps it). Here the expectation is the mean over the
sweep's grid and L(η) the mean over seeds at that rate.

A run is **stable** when it did not diverge (NaN/Inf), raised no rising-gradient warning, and
did not collapse (the stress test's reader decides; `audit/stability/stress.py`: it ended below the
unigram loss). The **largest stable rate** of a seed is the largest rate of the grid up to which
every one of that seed's runs was stable; the arm's is their lower median (a rate of the
grid), with the seeds' range.

The **verdict** compares an arm with the baseline by one declared **primary test**
(`fragility.fragility_test` on `rate_strata`): at the upper half of the grid, the arm's runs
are ranked with the baseline's at the same rate on whether they broke, on min(L, L₀) and on the
level of the gradient norm; the larger standardised rank gap, calibrated by relabelling the
runs within each rate, is exact under the null "at every rate, the arm's runs and the
baseline's are exchangeable". One primary test per arm forms the family, corrected by Holm
(family-wise error α, 0.05 by default): `more-fragile` when the corrected p < α and the arm
ranks worse, `more-robust` in the mirror case, `within-noise` otherwise, `not estimable` when a
rate lacks two runs of the arm or of the baseline.

Secondary, reported and deciding nothing: a stratified randomisation test of ΔS = S(arm) −
S(baseline) (labels shuffled among the runs of each rate), and the exact stratified test of
the number of the arm's unstable runs (a sum of hypergeometrics, one per rate: the conditional
test behind Cochran–Mantel–Haenszel), each corrected over the arms on its own.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from scipy import stats as sps

from archaudit.stats.analyses.fragility import (
    FragilityTest,
    Stratum,
    fragility_test,
    high_weights,
    smallest_p,
)
from archaudit.stats.inference.corrections import adjust_pvalues, error_rate


class StabilityOutcome(StrEnum):
    """A stability verdict (docs/stability.md); compares and prints as its text."""

    MORE_FRAGILE = "more-fragile"
    """The corrected primary p < α and the arm ranks worse than the baseline."""
    MORE_ROBUST = "more-robust"
    """The mirror case: it ranks better."""
    WITHIN_NOISE = "within-noise"
    NOT_ESTIMABLE = "not estimable"
    """A rate (or depth) lacks two runs of the arm or of the baseline."""

    @property
    def sign(self) -> int:
        """+1 more robust than the baseline, −1 more fragile, 0 neither."""
        return OUTCOME_SIGNS.get(self, 0)


OUTCOME_SIGNS = {StabilityOutcome.MORE_ROBUST: 1, StabilityOutcome.MORE_FRAGILE: -1}
MORE_FRAGILE, MORE_ROBUST = StabilityOutcome.MORE_FRAGILE, StabilityOutcome.MORE_ROBUST
WITHIN_NOISE, NOT_ESTIMABLE = StabilityOutcome.WITHIN_NOISE, StabilityOutcome.NOT_ESTIMABLE
"""The members by their old names, which the stress records import."""
STABILITY_VERDICTS = tuple(StabilityOutcome)
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
    grad_level: float = math.nan
    """The mean of ln ‖g‖ over the second half of its logged steps (NaN: not logged)."""

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
    """95% selection-aware interval (`sensitivity_interval`): it covers whichever rate is
    truly best; not symmetric about `sensitivity`."""
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
    censored: bool = False
    """The largest stable rate is the top rate trained (of the grid, or of `extra_lrs`): the
    arm's real range is ≥ it (the sweep never broke it there), so it is written "≥ rate"."""
    extra_lrs: tuple[float, ...] = ()
    """Rates trained above the grid (`stress.extra_rates`: while the baseline had not broken);
    they count for the largest stable rate only, not for the other measures or the verdict."""


@dataclass(frozen=True)
class StabilityVerdict:
    """An arm against the baseline: the primary test corrected over the family of arms, and
    the secondary tests."""

    def __post_init__(self) -> None:  # a record read back from JSON holds the member too
        object.__setattr__(self, "verdict", StabilityOutcome(self.verdict))

    arm: str
    baseline: str
    sensitivity_delta: float
    """S(arm) − S(baseline): positive = more sensitive to the learning rate (worse)."""
    unstable_delta: int
    """The arm's unstable runs minus the baseline's over the grid."""
    p_sensitivity: float | None
    p_stability: float | None
    p_sensitivity_adjusted: float | None
    """Secondary: corrected over the arms' sensitivity tests alone (decides nothing)."""
    p_stability_adjusted: float | None
    """Secondary: corrected over the arms' unstable-run tests alone (decides nothing)."""
    verdict: StabilityOutcome
    alpha: float
    correction: str
    error_rate: str
    """What the correction controls over the family (FWER for Holm)."""
    p_primary: float | None = None
    """The primary test's two-sided p (`fragility.fragility_test`); None: not estimable."""
    p_primary_adjusted: float | None = None
    """Corrected over the family of one primary test per arm: the verdict's p."""
    primary_measure: str = ""
    """The primary measure with the larger |z|, which gave the direction."""
    primary_z: tuple[float, ...] = ()
    """Per measure of `fragility.MEASURES` (loss, grad_norm): the rank contrast in SDs of its
    permutation distribution; positive = the arm degrades more at the high rates."""


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


def measure(sweep: Sweep, confidence: float = 0.95, above: Sequence[SweepRun] = ()) -> ArmStability:
    """The arm's sensitivity, largest stable rate, best rate and break steps. `above`: runs at
    rates above the grid (the stress test's extension while the baseline has not broken),
    which count only for the largest stable rate."""
    losses = sweep.clamped()
    means = np.array([v.mean() for v in losses])
    best = int(np.argmin(means))
    s = sensitivity(means)
    lo, hi = sensitivity_interval(SweepLosses.of(sweep), confidence)
    reach = Sweep.of(sweep.arm, [*(r for runs in sweep.by_rate for r in runs), *above])
    per_seed = _largest_stable_per_seed(reach)
    stable = [lr for lr in per_seed if lr is not None]
    return ArmStability(
        arm=sweep.arm,
        lrs=sweep.lrs,
        mean_loss=tuple(float(m) for m in means),
        sensitivity=s,
        sensitivity_interval=(float(lo), float(hi)),
        largest_stable_lr=statistics.median_low(stable) if stable else None,
        largest_stable_range=(min(stable, default=None), max(stable, default=None)),
        best_lr=sweep.lrs[best],
        unstable=tuple(sum(not r.stable for r in runs) for runs in sweep.by_rate),
        runs=tuple(len(runs) for runs in sweep.by_rate),
        break_steps=tuple(tuple(r.break_step for r in runs) for runs in sweep.by_rate),
        seeds=min(len(runs) for runs in sweep.by_rate),
        censored=bool(stable) and statistics.median_low(stable) == reach.lrs[-1],
        extra_lrs=reach.lrs[len(sweep.lrs) :],
    )


@dataclass(frozen=True)
class SweepLosses:
    """A sweep's clamped final losses as arrays (…, rates, seeds): leading axes are a batch of
    sweeps, NaN pads a rate with fewer seeds."""

    clamped: np.ndarray
    """min(L(η), L₀) of each run."""
    diverged: np.ndarray
    """Whether the run counts as L₀ (it diverged or ended at or above its initial loss)."""
    initial: np.ndarray
    """L₀ of each run."""

    @classmethod
    def of(cls, sweep: Sweep) -> SweepLosses:
        width = max(len(runs) for runs in sweep.by_rate)
        pad = [[*runs, *[None] * (width - len(runs))] for runs in sweep.by_rate]
        clamped = np.array([[r.clamped if r else math.nan for r in row] for row in pad])
        initial = np.array([[r.initial_loss if r else math.nan for r in row] for row in pad])
        return cls(clamped, clamped >= initial, initial)


def sensitivity_interval(
    losses: SweepLosses, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of S = max_k θ_k, θ_k = mean_η μ(η) − μ(k), μ the expected clamped loss
    (the best rate is the k that maximises it; docs/stability.md). Each θ_k has a t interval
    (`_rate_variances`, the pooled df): every θ_k lies above its lower bound at once
    (Bonferroni over the R rates, one-sided (1 − confidence)/2R), so S ≥ the largest lower
    bound; the true best rate's θ lies below its upper bound (one-sided (1 − confidence)/2),
    so S ≤ the largest upper bound. NaN without replicated rates."""
    counts = np.sum(~np.isnan(losses.clamped), axis=-1)
    rates = counts.shape[-1]
    dof = float((counts - 1).sum(axis=-1).min())
    if dof < 1:
        nan = np.full(counts.shape[:-1], math.nan)
        return nan, nan
    weights = np.full((rates, rates), 1.0 / rates) - np.eye(rates)  # row k: the c of θ_k
    estimate = np.nanmean(losses.clamped, axis=-1) @ weights.T
    spread = _rate_variances(losses, counts, dof) / counts
    se = np.sqrt(np.einsum("...j,kj->...k", spread, weights**2))
    alpha = 1 - confidence
    below = sps.t.ppf(1 - alpha / (2 * rates), dof)
    above = sps.t.ppf(1 - alpha / 2, dof)
    return (estimate - below * se).max(axis=-1), (estimate + above * se).max(axis=-1)


def _rate_variances(losses: SweepLosses, counts: np.ndarray, dof: float) -> np.ndarray:
    """Per rate, the seed variance of its clamped loss: the variance pooled over rates, or at a
    rate of the **edge** (from the rate below the first divergence up to the first rate at
    which every run diverged) the larger of it and the variance of a divergence of chance
    p̃ = (k + ½)/(n + 1), k of its n runs diverged: p̃(1 − p̃)·(L₀ − the kept loss)², the kept
    loss that of its runs that did not diverge (else of the nearest rate below). Seeds cannot
    show a divergence they did not draw; this keeps an edge rate's spread from reading 0."""
    centred = losses.clamped - np.nanmean(losses.clamped, axis=-1, keepdims=True)
    pooled = np.nansum(centred**2, axis=(-1, -2))[..., None] / dof
    diverged = np.sum(losses.diverged, axis=-1)
    kept = np.where(losses.diverged, np.nan, losses.clamped)
    has_kept = diverged < counts
    index = np.arange(counts.shape[-1])
    nearest = np.maximum.accumulate(np.where(has_kept, index, 0), axis=-1)
    gap = np.nanmean(losses.initial, axis=-1) - np.take_along_axis(
        np.nanmean(np.where(has_kept[..., None], kept, 0.0), axis=-1), nearest, axis=-1
    )
    gap = np.where(np.take_along_axis(has_kept, nearest, axis=-1), gap, 0.0)
    chance = (diverged + 0.5) / (counts + 1)
    edge = _edge(diverged > 0, diverged == counts, index)
    return np.where(edge, np.maximum(pooled, chance * (1 - chance) * gap**2), pooled)


def _edge(some: np.ndarray, every: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The rates from the one below the first with a divergence up to the first at which every
    run diverged (none when no run diverged)."""
    first = np.where(some.any(axis=-1), some.argmax(axis=-1), index.size)[..., None]
    last = np.where(every.any(axis=-1), every.argmax(axis=-1), index.size - 1)[..., None]
    return (index >= first - 1) & (index <= last) & some.any(axis=-1, keepdims=True)


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


def undeclarable(seeds: int, rates: Sequence[float], arms: int, alpha: float) -> str:
    """Why a sweep of `seeds` runs per rate over `rates` cannot declare any of `arms` arms
    more-fragile or more-robust under Holm at `alpha` ("" when it can): its primary test's
    smallest p is above the first Holm threshold α/m."""
    high = sum(w > 0 for w in high_weights(rates, statistics.median_low(rates)))
    return _floor_note(seeds, high, arms, alpha, f"the {high} high rates", "stress.seeds")


def undeclarable_depth(
    seeds: int, depths: Sequence[int], rates: Sequence[float], arms: int, alpha: float
) -> str:
    """The same for the depth stress: its high strata are every deeper model (`depths`, the
    multiples of the layers) at every depth rate; "" when it can declare, or has no depths."""
    high = len(depths) * len(rates)
    if not high:
        return ""
    where = f"the {high} deeper (depth, rate) strata"
    return _floor_note(seeds, high, arms, alpha, where, "stress.seeds", test="depth test")


def _floor_note(
    seeds: int, high: int, arms: int, alpha: float, where: str, key: str, test: str = "primary test"
) -> str:
    floor = smallest_p([(seeds, seeds)] * high)
    threshold = alpha / max(arms, 1)
    if floor <= threshold:
        return ""
    return (
        f"with {seeds} seeds per stratum the {test}'s smallest p over {where} is {floor:.2g}, "
        f"above Holm's first threshold α/m = {threshold:.2g} for {arms} "
        f"arm{'s' * (arms != 1)}: no arm can be declared more-fragile or more-robust; set "
        f"{key} = {seeds_needed(high, threshold)} (docs/stability.md)"
    )


def seeds_needed(high: int, threshold: float) -> int:
    """The fewest seeds per stratum whose exact floor over `high` strata is ≤ `threshold`."""
    seeds = 2
    while smallest_p([(seeds, seeds)] * high) > threshold:
        seeds += 1
    return seeds


def rate_strata(arm: Sweep, base: Sweep) -> list[Stratum]:
    """The primary test's strata of a rate sweep: one per rate, the high ones the upper half of
    the grid (above its lower median: the top 3 of 6 rates)."""
    weights = high_weights(base.lrs, statistics.median_low(base.lrs))
    return [
        Stratum(_scores(a), _scores(b), w)
        for a, b, w in zip(arm.by_rate, base.by_rate, weights, strict=True)
    ]


def _scores(runs: Sequence[SweepRun]) -> tuple[tuple[float, ...], ...]:
    """Each run's score on the primary measures (`fragility.MEASURES`): +∞ when it broke."""
    return tuple(
        (0.0, r.clamped, r.grad_level) if r.stable else (1.0, math.inf, math.inf) for r in runs
    )


def judge_stability(
    sweeps: Mapping[str, Sweep],
    baseline: str,
    *,
    alpha: float = 0.05,
    correction: str = "holm",
    permutations: int = PERMUTATIONS,
) -> list[StabilityVerdict]:
    """Every arm but the baseline against it. The family is one primary test per estimable
    arm (`fragility_test` on `rate_strata`); the secondary tests (ΔS, unstable runs) are each
    corrected over the arms on their own and decide nothing."""
    base = sweeps[baseline]
    arms = [a for a in sweeps if a != baseline and estimable(sweeps[a], base)]
    primary = [fragility_test(rate_strata(sweeps[a], base), permutations) for a in arms]
    secondary = [
        (*sensitivity_test(sweeps[a], base, permutations), *stability_test(sweeps[a], base))
        for a in arms
    ]
    adjusted = _adjusted([t.p for t in primary], correction)
    adjusted_s = _adjusted([s[1] for s in secondary], correction)
    adjusted_u = _adjusted([s[3] for s in secondary], correction)
    judged = {}
    for i, arm in enumerate(arms):
        ds, ps, du, pu = secondary[i]
        test = primary[i]
        judged[arm] = StabilityVerdict(
            arm,
            baseline,
            ds,
            int(du),
            ps,
            pu,
            adjusted_s[i],
            adjusted_u[i],
            _verdict(test, adjusted[i], alpha),
            alpha,
            correction,
            error_rate(correction),
            test.p,
            adjusted[i],
            test.measure,
            test.z,
        )
    return [
        judged.get(a) or _not_estimable(a, baseline, alpha, correction)
        for a in sweeps
        if a != baseline
    ]


def _adjusted(pvalues: Sequence[float], correction: str) -> list[float]:
    return [float(p) for p in adjust_pvalues(pvalues, correction)] if pvalues else []


def _verdict(test: FragilityTest, p_adjusted: float, alpha: float) -> StabilityOutcome:
    if p_adjusted >= alpha or test.direction == 0:
        return WITHIN_NOISE
    return MORE_FRAGILE if test.direction > 0 else MORE_ROBUST


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


@dataclass(frozen=True)
class DepthVerdict:
    """An arm against the baseline in the depth stress: the primary test with the deeper
    models (at each depth rate) as the high strata, corrected over the depth stress's arms."""

    def __post_init__(self) -> None:  # a record read back from JSON holds the member too
        object.__setattr__(self, "verdict", StabilityOutcome(self.verdict))

    arm: str
    baseline: str
    unstable_delta: int
    """The arm's unstable runs minus the baseline's in the deeper models."""
    p: float | None
    p_adjusted: float | None
    measure: str
    """The primary measure with the larger |z| (`fragility.MEASURES`)."""
    z: tuple[float, ...]
    verdict: StabilityOutcome
    alpha: float
    correction: str
    error_rate: str


def depth_strata(arm: Sequence[SweepRun], base: Sequence[SweepRun]) -> list[Stratum] | None:
    """One stratum per (rate, layers) of the depth stress, high when deeper than the sweep's
    models; None unless both have the same strata with two runs or more in each."""
    keys = sorted({(r.lr, r.layers) for r in base})
    if keys != sorted({(r.lr, r.layers) for r in arm}):
        return None
    grouped = [
        ([r for r in arm if (r.lr, r.layers) == key], [r for r in base if (r.lr, r.layers) == key])
        for key in keys
    ]
    if any(len(a) < 2 or len(b) < 2 for a, b in grouped):
        return None
    weights = high_weights([layers for _, layers in keys], min(k[1] for k in keys))
    return [Stratum(_scores(a), _scores(b), w) for (a, b), w in zip(grouped, weights, strict=True)]


def judge_depth(
    runs: Mapping[str, Sequence[SweepRun]],
    baseline: str,
    *,
    alpha: float = 0.05,
    correction: str = "holm",
    permutations: int = PERMUTATIONS,
) -> list[DepthVerdict]:
    """Every arm of the depth stress but the baseline against it: one primary test per arm,
    its own family (beside the rate sweep's)."""
    base = runs[baseline]
    strata = {a: depth_strata(runs[a], base) for a in runs if a != baseline}
    tested = {a: fragility_test(s, permutations) for a, s in strata.items() if s is not None}
    adjusted = dict(zip(tested, _adjusted([t.p for t in tested.values()], correction), strict=True))
    out = []
    for arm in strata:
        test = tested.get(arm)
        deeper = min(r.layers for r in base)
        delta = sum(not r.stable for r in runs[arm] if r.layers > deeper) - sum(
            not r.stable for r in base if r.layers > deeper
        )
        verdict = NOT_ESTIMABLE if test is None else _verdict(test, adjusted[arm], alpha)
        out.append(
            DepthVerdict(
                arm,
                baseline,
                delta,
                None if test is None else test.p,
                adjusted.get(arm),
                "" if test is None else test.measure,
                () if test is None else test.z,
                verdict,
                alpha,
                correction,
                error_rate(correction),
            )
        )
    return out


@dataclass(frozen=True)
class GroupVerdict:
    """The arms declared fragile (`stress.fragile`) against the other swept arms: one
    primary test on their pooled runs, at α with no correction (it is the only one)."""

    fragile: tuple[str, ...]
    others: tuple[str, ...]
    p: float
    measure: str
    z: tuple[float, ...]
    verdict: str
    """`more-fragile`: the declared arms rank worse than the others; `more-robust`: better;
    `within-noise`; `not estimable` (a rate lacks two runs of either group)."""
    alpha: float
    error_rate: str = "type I error"


def group_strata(fragile: Sequence[SweepRun], others: Sequence[SweepRun]) -> list[Stratum] | None:
    """One stratum per rate of the sweep: the declared-fragile arms' runs against the other
    arms' at that rate, the upper half of the grid high; None unless both groups have the same
    rates and two runs or more at each."""
    rates = sorted({r.lr for r in others})
    if not rates or rates != sorted({r.lr for r in fragile}):
        return None
    grouped = [
        ([r for r in fragile if r.lr == lr], [r for r in others if r.lr == lr]) for lr in rates
    ]
    if len(rates) < 2 or any(len(a) < 2 or len(b) < 2 for a, b in grouped):
        return None
    weights = high_weights(rates, statistics.median_low(rates))
    return [Stratum(_scores(a), _scores(b), w) for (a, b), w in zip(grouped, weights, strict=True)]


def judge_group(
    sweeps: Mapping[str, Sweep],
    fragile: Sequence[str],
    baseline: str,
    *,
    alpha: float = 0.05,
    permutations: int = PERMUTATIONS,
) -> GroupVerdict | None:
    """The group test (module docstring of `fragility`, with the declared-fragile arms as the
    arm and every other swept arm but the baseline as the reference); None when no arm is
    declared. Exact under the null "at every rate, the runs of all these arms are
    exchangeable"."""
    if not fragile:
        return None
    others = tuple(a for a in sweeps if a != baseline and a not in fragile)
    declared = tuple(a for a in fragile if a in sweeps)
    runs = [
        [r for a in group for rs in sweeps[a].by_rate for r in rs] for group in (declared, others)
    ]
    strata = group_strata(*runs) if declared and others else None
    if strata is None:
        nan = tuple(math.nan for _ in range(3))
        return GroupVerdict(declared, others, 1.0, "", nan, NOT_ESTIMABLE, alpha)
    test = fragility_test(strata, permutations)
    return GroupVerdict(
        declared, others, test.p, test.measure, test.z, _verdict(test, test.p, alpha), alpha
    )
