"""Simulated learning-rate sweeps: the stability verdict's FWER and power (docs/stability.md).

A `SweepModel` draws one arm's sweep: per rate and seed, a final loss (the model's curve plus
Gaussian seed noise), a gradient-norm level (ln ‖g‖: its curve plus Gaussian noise) and
whether the run broke (with the rate's break probability; a broken run has no final loss and
counts as its initial loss). The default is shaped on the stored stress-tiny sweep (six rates
over 2.5 decades, recipe rate the second; the loss bottoms out at the recipe's rate and rises
towards the unigram plateau; the gradient norm grows with the rate). A null audit sweeps the
baseline's model for every arm; a planted fragile arm changes one thing:

- `breaking_at_top(model, 2)`: every run at the top two rates breaks;
- `grad_norm_times(model, 2.0)`: its gradient norm is 2× the baseline's at the rates above the
  recipe's (the level ln ‖g‖ + ln 2), nothing else.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from archaudit.stats.analyses.stability import (
    PERMUTATIONS,
    StabilityVerdict,
    Sweep,
    SweepRun,
    judge_stability,
)

LRS = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1)
RECIPE_LR = 3e-3
"""The rate the sweep's multiples are of (factor 1 of the default grid)."""


@dataclass(frozen=True)
class SweepModel:
    lrs: tuple[float, ...] = LRS
    loss: tuple[float, ...] = (2.0, 1.0, 1.1, 1.4, 2.2, 3.5)
    loss_sd: float = 0.1
    log_grad: tuple[float, ...] = (-0.7, -0.5, -0.2, 0.3, 0.8, 1.3)
    """Per rate: the mean of ln ‖g‖ over the second half of a run."""
    log_grad_sd: float = 0.15
    breaks: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    """Per rate: the probability that a run breaks."""
    initial_loss: float = 5.5


RANDOM_BREAKS = SweepModel(breaks=(0.0, 0.0, 0.0, 0.0, 0.5, 0.5))
"""The harsher null (the calibration's before issue 43): every arm's runs at the top two rates
break with probability 1/2."""


def breaking_at_top(model: SweepModel, rates: int) -> SweepModel:
    """The model whose every run at the top `rates` rates breaks."""
    kept = model.breaks[: len(model.lrs) - rates]
    return dataclasses.replace(model, breaks=(*kept, *(1.0,) * rates))


def grad_norm_times(model: SweepModel, factor: float, above: float = RECIPE_LR) -> SweepModel:
    """The model whose gradient norm is `factor`× the baseline's at the rates above `above`."""
    shift = math.log(factor)
    grads = tuple(
        g + shift if lr > above * (1 + 1e-9) else g
        for lr, g in zip(model.lrs, model.log_grad, strict=True)
    )
    return dataclasses.replace(model, log_grad=grads)


def simulate_sweep(
    arm: str, model: SweepModel, seeds: int, rng: np.random.Generator, first_seed: int = 0
) -> list[SweepRun]:
    """One arm's runs: every rate of `model` × seeds first_seed .. first_seed + seeds − 1."""
    runs = []
    for i, lr in enumerate(model.lrs):
        for seed in range(first_seed, first_seed + seeds):
            broke = bool(rng.random() < model.breaks[i])
            loss = model.loss[i] + rng.normal(0.0, model.loss_sd)
            grad = model.log_grad[i] + rng.normal(0.0, model.log_grad_sd)
            runs.append(
                SweepRun(
                    arm,
                    lr,
                    seed,
                    model.initial_loss,
                    None if broke else loss,
                    not broke,
                    1 if broke else None,
                    grad_level=math.nan if broke else grad,
                )
            )
    return runs


def simulate_audit(
    models: dict[str, SweepModel], seeds: int, rng: np.random.Generator
) -> dict[str, Sweep]:
    """Every arm's sweep (the first is the baseline) at `seeds` seeds per rate."""
    return {arm: Sweep.of(arm, simulate_sweep(arm, m, seeds, rng)) for arm, m in models.items()}


@dataclass(frozen=True)
class AdaptiveOutcome:
    verdicts: tuple[StabilityVerdict, ...]
    runs: int
    """Runs trained over all arms, the baseline included."""


def simulate_adaptive(
    models: dict[str, SweepModel],
    rng: np.random.Generator,
    *,
    seeds: int = 2,
    promising: float = 0.25,
    permutations: int = PERMUTATIONS,
) -> AdaptiveOutcome:
    """The sweep at `seeds` seeds, then one more seed at every rate for each arm whose primary
    p is ≤ `promising` (and for the baseline when any arm gets one), judged again on all runs:
    a seed is added only where the verdict can still change."""
    runs = {a: simulate_sweep(a, m, seeds, rng) for a, m in models.items()}
    baseline = next(iter(models))
    first = judge_stability(
        {a: Sweep.of(a, r) for a, r in runs.items()}, baseline, permutations=permutations
    )
    more = [v.arm for v in first if v.p_primary is not None and v.p_primary <= promising]
    for arm in [baseline, *more] if more else []:
        runs[arm] += simulate_sweep(arm, models[arm], 1, rng, first_seed=seeds)
    sweeps = {a: Sweep.of(a, r) for a, r in runs.items()}
    verdicts = judge_stability(sweeps, baseline, permutations=permutations)
    return AdaptiveOutcome(tuple(verdicts), sum(len(r) for r in runs.values()))
