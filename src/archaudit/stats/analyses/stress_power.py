"""The stress test's power model: given a pilot, the power of its declared tests at any seeds.

A pilot (a stored stress test's runs) is fitted stratum by stratum, a stratum being a rate of
the sweep (or a depth and rate of the depth stress): per arm, the probability that a run
breaks, shrunk towards the arm's own rate over every stratum as (k + p̄)/(n + 1) with
p̄ = (K + ½)/(N + 1) (0 of 3 is not "never", and an arm that never broke in 18 runs rarely
breaks); and the mean of its final loss min(L, L₀) and of its gradient-norm level ln ‖g‖ over
the runs that did not break, with the seed SD of each pooled over the arm's and the
baseline's runs at that stratum (over every stratum where neither has two stable runs).
Simulated sweeps draw each run from its stratum's model (`simulate_runs`), and the declared
tests judge them exactly as they judge trained runs: the per-arm test with Holm over the arms
(`power`: the rate test, or the depth test), and the group test of the arms declared fragile
(`group_power`).

The power of an arm is the share of simulated sweeps in which it is declared in the pilot's
direction (the sign of its pilot test). The pilot's effect is an estimate, larger than the
truth on average when it was the reason to look (winner's curse): a power from a pilot is an
optimistic guide to the seeds to try, the confirming run the test.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from archaudit.stats.analyses import depth_sensitivity
from archaudit.stats.analyses.fragility import Stratum, fragility_test
from archaudit.stats.analyses.logits import LOGIT_MEASURES, LogitRun, logit_strata
from archaudit.stats.analyses.stability import (
    Sweep,
    SweepRun,
    depth_strata,
    estimable,
    group_strata,
    rate_strata,
)
from archaudit.stats.inference.corrections import adjust_pvalues

TARGET_POWER = 0.8
TRIALS = 200
PERMUTATIONS = 999
MAX_SEEDS = 12
"""The seeds `seeds_for` tries at most (the stress test's runs grow with them)."""

Key = tuple[float, int]
"""A stratum: (rate, layers)."""


@dataclass(frozen=True)
class StratumModel:
    breaks: float
    """The probability that a run breaks."""
    loss: float
    loss_sd: float
    grad: float
    grad_sd: float
    initial_loss: float


def _key(run: SweepRun) -> Key:
    return (run.lr, run.layers)


def fit(
    runs: Sequence[SweepRun], baseline: Sequence[SweepRun], effect: float = 1.0
) -> dict[Key, StratumModel]:
    """The model of one arm's `runs`, stratum by stratum, its seed SDs pooled with
    `baseline`'s runs at the same stratum (module docstring). `effect` < 1 shrinks the arm
    towards the baseline at every stratum (its break chance, loss and gradient level move to
    the baseline's + `effect` × the pilot's difference): a planned fraction of the pilot's
    effect, against the winner's curse."""
    model = _fit(runs, baseline)
    if effect == 1.0 or runs is baseline:
        return model
    reference = _fit(baseline, baseline)
    return {k: _shrunk(m, reference.get(k), effect) for k, m in model.items()}


def _shrunk(arm: StratumModel, base: StratumModel | None, effect: float) -> StratumModel:
    if base is None:
        return arm

    def toward(a: float, b: float) -> float:
        return b + effect * (a - b) if math.isfinite(a) and math.isfinite(b) else a

    return dataclasses.replace(
        arm,
        breaks=toward(arm.breaks, base.breaks),
        loss=toward(arm.loss, base.loss),
        grad=toward(arm.grad, base.grad),
    )


def _fit(runs: Sequence[SweepRun], baseline: Sequence[SweepRun]) -> dict[Key, StratumModel]:
    loss_sd = _pooled_sds(runs, baseline, lambda r: r.clamped)
    grad_sd = _pooled_sds(runs, baseline, lambda r: r.grad_level)
    prior = (sum(not r.stable for r in runs) + 0.5) / (len(runs) + 1)
    out = {}
    for key in sorted({_key(r) for r in runs}):
        at = [r for r in runs if _key(r) == key]
        stable = [r for r in at if r.stable]
        out[key] = StratumModel(
            breaks=(len(at) - len(stable) + prior) / (len(at) + 1),
            loss=_mean([r.clamped for r in stable]),
            loss_sd=loss_sd[key],
            grad=_mean([r.grad_level for r in stable]),
            grad_sd=grad_sd[key],
            initial_loss=_mean([r.initial_loss for r in at]),
        )
    return out


def _pooled_sds(
    runs: Sequence[SweepRun], baseline: Sequence[SweepRun], value: Callable[[SweepRun], float]
) -> dict[Key, float]:
    """Per stratum of `runs`: the SD of `value` pooled over the two arms' stable runs there;
    where neither arm has two, the SD pooled over every stratum (0 when none has)."""
    by_key: dict[Key, tuple[float, int]] = {}
    for key in {_key(r) for r in runs}:
        groups = [
            [value(r) for r in arm if _key(r) == key and r.stable] for arm in (runs, baseline)
        ]
        groups = [[v for v in g if math.isfinite(v)] for g in groups]
        squares = sum(float(np.sum((np.array(g) - np.mean(g)) ** 2)) for g in groups if len(g) > 1)
        dof = sum(len(g) - 1 for g in groups if len(g) > 1)
        by_key[key] = (squares, dof)
    total = sum(s for s, _ in by_key.values())
    dof = sum(d for _, d in by_key.values())
    overall = math.sqrt(total / dof) if dof else 0.0
    return {k: math.sqrt(s / d) if d else overall for k, (s, d) in by_key.items()}


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def simulate_runs(
    arm: str, model: Mapping[Key, StratumModel], seeds: int, rng: np.random.Generator
) -> list[SweepRun]:
    """`seeds` runs of `arm` at every stratum of `model`."""
    runs = []
    for (lr, layers), m in model.items():
        for seed in range(seeds):
            broke = bool(rng.random() < m.breaks)
            loss = m.loss + rng.normal(0.0, m.loss_sd) if math.isfinite(m.loss) else m.initial_loss
            grad = m.grad + rng.normal(0.0, m.grad_sd) if math.isfinite(m.grad) else math.nan
            runs.append(
                SweepRun(
                    arm,
                    lr,
                    seed,
                    m.initial_loss,
                    None if broke else min(loss, m.initial_loss),
                    not broke,
                    1 if broke else None,
                    layers=layers,
                    grad_level=math.nan if broke else grad,
                )
            )
    return runs


@dataclass(frozen=True)
class ArmPower:
    arm: str
    seeds: int
    direction: int
    """The pilot's direction (+1 more fragile, −1 more robust, 0: the pilot has none)."""
    power: float
    """The share of simulated sweeps declaring the arm in `direction`."""
    trials: int


StrataOf = Callable[[Sequence[SweepRun], Sequence[SweepRun]], list[Stratum] | None]
Tester = Callable[[Sequence[SweepRun], Sequence[SweepRun], int, int], tuple[float, int]]
"""A per-arm test of simulated runs: (arm, baseline, permutations, seed) -> (p, direction)."""


def _rate(arm: Sequence[SweepRun], base: Sequence[SweepRun]) -> list[Stratum] | None:
    a, b = Sweep.of("arm", arm), Sweep.of("base", base)
    return rate_strata(a, b) if estimable(a, b) else None


def _ranked(strata_of: StrataOf) -> Tester:
    """The primary rank test (`fragility_test`) on the strata `strata_of` builds."""

    def test(
        arm: Sequence[SweepRun], base: Sequence[SweepRun], permutations: int, seed: int
    ) -> tuple[float, int]:
        strata = strata_of(arm, base)
        if strata is None:
            return 1.0, 0
        result = fragility_test(strata, permutations, seed=seed)
        return result.p, result.direction

    return test


def _depth_loss(
    arm: Sequence[SweepRun], base: Sequence[SweepRun], permutations: int, seed: int
) -> tuple[float, int]:
    """The depth-sensitivity test (`depth_sensitivity`): ΔD's sign is its direction."""
    strata = depth_sensitivity.sensitivity_strata(arm, base)
    if strata is None:
        return 1.0, 0
    delta, p = depth_sensitivity.sensitivity_test(strata, permutations, seed)
    return p, int(np.sign(delta))


TESTS: dict[str, Tester] = {
    "rate": _ranked(_rate),
    "depth": _ranked(depth_strata),
    "depth-loss": _depth_loss,
}
"""The per-arm tests `power` simulates, by the name `plan_power` gives them."""


def power(
    pilot: Mapping[str, Sequence[SweepRun]],
    baseline: str,
    seeds: int,
    *,
    test: str = "rate",
    alpha: float = 0.05,
    correction: str = "holm",
    trials: int = TRIALS,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    effect: float = 1.0,
    direction: int | None = None,
) -> list[ArmPower]:
    """Each arm's power at `seeds` seeds per stratum: the per-arm test (`test`, a key of
    `TESTS`), corrected over the arms, on `trials` sweeps drawn from the pilot's model, the
    arms shrunk to `effect` × the pilot's difference from the baseline (`fit`); a declaration
    counts in the arm's pilot direction, or in `direction` (+1 more fragile, −1 more robust)
    for every arm when given (a published claim's)."""
    tester = TESTS[test]
    arms = [a for a in pilot if a != baseline]
    directions = (
        dict.fromkeys(arms, direction)
        if direction is not None
        else {a: tester(pilot[a], pilot[baseline], permutations, 0)[1] for a in arms}
    )
    models = {a: fit(pilot[a], pilot[baseline], 1.0 if a == baseline else effect) for a in pilot}
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(arms, 0)
    for _ in range(trials):
        runs = {a: simulate_runs(a, m, seeds, rng) for a, m in models.items()}
        tests = {
            a: tester(runs[a], runs[baseline], permutations, int(rng.integers(2**31))) for a in arms
        }
        adjusted = adjust_pvalues([tests[a][0] for a in arms], correction)
        for arm, p in zip(arms, adjusted, strict=True):
            hit = p < alpha and tests[arm][1] == directions[arm] != 0
            hits[arm] += int(hit)
    return [ArmPower(a, seeds, directions[a], hits[a] / trials, trials) for a in arms]


def group_power(
    pilot: Mapping[str, Sequence[SweepRun]],
    fragile: Sequence[str],
    others: Sequence[str],
    seeds: int,
    *,
    alpha: float = 0.05,
    trials: int = TRIALS,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> float:
    """The group test's power (`stability.judge_group`): the share of simulated sweeps in
    which the `fragile` arms are declared more fragile than the `others`."""
    reference = [r for a in others for r in pilot[a]]
    models = {a: fit(pilot[a], reference) for a in (*fragile, *others)}
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        runs = {a: simulate_runs(a, m, seeds, rng) for a, m in models.items()}
        strata = group_strata(
            [r for a in fragile for r in runs[a]], [r for a in others for r in runs[a]]
        )
        p, direction = _test(strata, permutations, rng)
        hits += int(p < alpha and direction > 0)
    return hits / trials


def _test(
    strata: list[Stratum] | None, permutations: int, rng: np.random.Generator
) -> tuple[float, int]:
    if strata is None:
        return 1.0, 0
    result = fragility_test(strata, permutations, seed=int(rng.integers(2**31)))
    return result.p, result.direction


def seeds_for(
    power_at: Callable[[int], float],
    start: int,
    target: float = TARGET_POWER,
    most: int = MAX_SEEDS,
) -> int | None:
    """The fewest seeds from `start` up to `most` whose power reaches `target` (None: none
    does)."""
    for seeds in range(start, most + 1):
        if power_at(seeds) >= target:
            return seeds
    return None


@dataclass(frozen=True)
class LogitModel:
    """One arm at one rate: the mean and SD of ln(largest attention logit) and of |log Z|
    over its stable runs (SDs pooled with the baseline's), and how often a run breaks."""

    breaks: float
    attn: float
    attn_sd: float
    log_z: float
    log_z_sd: float


def fit_logits(runs: Sequence[LogitRun], baseline: Sequence[LogitRun]) -> dict[float, LogitModel]:
    """The logit test's model of one arm, rate by rate (as `fit`, on the two logit measures;
    the attention logit on a log scale, as it grows by decades over the grid)."""
    prior = (sum(not r.stable for r in runs) + 0.5) / (len(runs) + 1)
    out = {}
    for lr in sorted({r.lr for r in runs}):
        at = [r for r in runs if r.lr == lr]
        both = [[r for r in arm if r.lr == lr and r.stable] for arm in (at, baseline)]
        out[lr] = LogitModel(
            breaks=(sum(not r.stable for r in at) + prior) / (len(at) + 1),
            attn=_mean([_log(r.attn_logit) for r in both[0]]),
            attn_sd=_pooled([[_log(r.attn_logit) for r in g] for g in both]),
            log_z=_mean([r.log_z for r in both[0]]),
            log_z_sd=_pooled([[r.log_z for r in g] for g in both]),
        )
    return out


def _log(value: float) -> float:
    return math.log(value) if value > 0 else math.nan


def _pooled(groups: Sequence[Sequence[float]]) -> float:
    finite = [[v for v in g if math.isfinite(v)] for g in groups]
    squares = sum(float(np.sum((np.array(g) - np.mean(g)) ** 2)) for g in finite if len(g) > 1)
    dof = sum(len(g) - 1 for g in finite if len(g) > 1)
    return math.sqrt(squares / dof) if dof else 0.0


def simulate_logits(
    arm: str, model: Mapping[float, LogitModel], seeds: int, rng: np.random.Generator
) -> list[LogitRun]:
    runs = []
    for lr, m in model.items():
        for seed in range(seeds):
            broke = bool(rng.random() < m.breaks)
            attn = math.exp(m.attn + rng.normal(0.0, m.attn_sd))
            runs.append(
                LogitRun(arm, lr, seed, not broke, attn, abs(m.log_z + rng.normal(0, m.log_z_sd)))
            )
    return runs


def logit_power(
    pilot: Mapping[str, Sequence[LogitRun]],
    baseline: str,
    seeds: int,
    *,
    alpha: float = 0.05,
    correction: str = "holm",
    trials: int = TRIALS,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    direction: int | None = None,
) -> list[ArmPower]:
    """Each arm's power in the logit test (`logits.judge_logits`) at `seeds` seeds per rate,
    in its pilot direction (or `direction` for every arm, as `power`), on `trials` sweeps
    drawn from the pilot's logit model."""
    arms = [a for a in pilot if a != baseline]
    directions = (
        dict.fromkeys(arms, direction)
        if direction is not None
        else {
            a: _logit_test(logit_strata(pilot[a], pilot[baseline]), permutations, 0)[1]
            for a in arms
        }
    )
    models = {a: fit_logits(pilot[a], pilot[baseline]) for a in pilot}
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(arms, 0)
    for _ in range(trials):
        runs = {a: simulate_logits(a, m, seeds, rng) for a, m in models.items()}
        tests = {
            a: _logit_test(
                logit_strata(runs[a], runs[baseline]), permutations, int(rng.integers(2**31))
            )
            for a in arms
        }
        adjusted = adjust_pvalues([tests[a][0] for a in arms], correction)
        for arm, p in zip(arms, adjusted, strict=True):
            hits[arm] += int(p < alpha and tests[arm][1] == directions[arm] != 0)
    return [ArmPower(a, seeds, directions[a], hits[a] / trials, trials) for a in arms]


def _logit_test(strata: list[Stratum] | None, permutations: int, seed: int) -> tuple[float, int]:
    if strata is None:
        return 1.0, 0
    result = fragility_test(strata, permutations, seed=seed, measures=LOGIT_MEASURES)
    return result.p, result.direction
