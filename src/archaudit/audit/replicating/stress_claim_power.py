"""The power a stress claim's design had, for the effect its confirming run measured (issue 54).

A stress claim is decided by one of the stress test's permutation tests (the rate test, the
depth test, the depth-sensitivity test or the logit test, Holm over the sweep's arms). Its
power is not a formula: the stress power model (`stats.analyses.stress_power`, what
`stress --plan --pilot` prints) fits the runs the confirming run stored
(`StressResult.sweep_runs`, `depth_runs`, the logit measures of its traces), simulates
`TRIALS` sweeps at the design's seeds from that fit (its random generator seeded with `SEED`:
the same runs, the same power, every time the table is generated), and counts the sweeps whose
test declares the claim's arm in the claim's published direction. The seeds that reach 0.8 are
searched the same way, up to `most_seeds`.

The effect is the one measured in the confirming run itself, so a claim it reproduced has,
as its power, how often a rerun of the same design on fresh seeds would reproduce it if that
run's effect were the truth (an estimate, optimistic when the run was lucky), and a claim it
did not establish, how far the design was from the effect it saw.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from archaudit.audit.grid.plan import BASELINE
from archaudit.audit.stability.stress_result import StressResult
from archaudit.stats.analyses import stress_power as model

TRIALS = 200
"""Simulated sweeps per seed count (`stress --plan --pilot`'s): 0.8 is known to ±0.06 (95%)."""
SEED = 0
"""The simulations' random seed: the table is the same bytes every time it is generated."""

TEST_NAMES = {
    "stress-rate": "rate",
    "stress-depth": "depth",
    "stress-depth-loss": "depth-loss",
    "stress-logit": "logit",
}
"""The claim's test → the stress test whose power is modelled."""


@dataclass(frozen=True)
class StressClaimPower:
    """The design's power for the claim, from the confirming run's own runs."""

    power: float
    arm: str
    direction: str
    """The published direction as the stress test declares it (more-fragile / more-robust)."""
    test: str
    """"rate", "depth", "depth-loss" (the depth-sensitivity test) or "logit"."""
    seeds: int
    needed: int | None
    """The fewest seeds reaching 0.8 (the design's own when it does); None: none up to `most`."""
    most: int
    trials: int = TRIALS

    def power_for(self) -> str:
        """The power cell's words after the number: what it is the power of, where the effect
        comes from, and the seeds that reach 0.8."""
        return (
            f"{self.arm} {self.direction} (published) by the {self.test} test at {self.seeds} "
            f"seeds, for the effect measured in the confirming run (stress power model, "
            f"{self.trials} simulated sweeps); {self.reach()}"
        )

    def reach(self) -> str:
        if self.power >= model.TARGET_POWER:
            return f"0.8 reached at {self.seeds} seeds"
        if self.needed is None:
            return f"0.8 not reached by {self.most} seeds"
        return f"0.8 at {self.needed} seeds"


def most_seeds(seeds: int) -> int:
    """How far the search for 0.8 goes: the model's `MAX_SEEDS`, or twice the design's."""
    return max(model.MAX_SEEDS, 2 * seeds)


def stress_claim_power(
    result: StressResult,
    test: str,
    arm: str,
    fragile: int,
    seeds: int,
    *,
    alpha: float,
    correction: str,
) -> StressClaimPower | None:
    """The power of `test` (a claim's stress test, a key of `TEST_NAMES`) to
    declare `arm` in the direction `fragile` (+1 more fragile, −1 more robust) at `seeds`,
    fitted to `result`'s stored runs, and the seeds for 0.8; None when the result stores no
    runs of the arm and the baseline for that test (written before the power model, or
    trimmed)."""
    name = TEST_NAMES[test]
    at = _power_at(result, name, arm, fragile, alpha=alpha, correction=correction)
    if at is None:
        return None
    power = at(seeds)
    most = most_seeds(seeds)
    needed = seeds if power >= model.TARGET_POWER else model.seeds_for(at, seeds + 1, most=most)
    direction = "more-fragile" if fragile > 0 else "more-robust"
    return StressClaimPower(power, arm, direction, name, seeds, needed, most, TRIALS)


Simulate = Callable[[int], list[model.ArmPower]]
"""Every arm's power at a number of seeds, from a fitted pilot."""


def _simulate_runs(test: str, depth: bool) -> Callable[..., tuple[dict, Simulate]]:
    """The rate, depth and depth-sensitivity tests: fitted to the sweep's or the depth
    stress's runs."""

    def fit(result: StressResult, fragile: int, alpha: float, correction: str):
        runs = result.pilot(depth=depth)
        return runs, lambda seeds: model.power(
            runs, BASELINE, seeds, test=test, alpha=alpha, correction=correction, trials=TRIALS,
            seed=SEED, direction=fragile,
        )  # fmt: skip

    return fit


def _simulate_logits(result: StressResult, fragile: int, alpha: float, correction: str):
    """The logit test: fitted to the logit measures of the grid's runs."""
    logits = result.logit_pilot()
    return logits, lambda seeds: model.logit_power(
        logits, BASELINE, seeds, alpha=alpha, correction=correction, trials=TRIALS, seed=SEED,
        direction=fragile,
    )  # fmt: skip


SIMULATORS: dict[str, Callable[..., tuple[dict, Simulate]]] = {
    "rate": _simulate_runs("rate", depth=False),
    "depth": _simulate_runs("depth", depth=True),
    "depth-loss": _simulate_runs("depth-loss", depth=True),
    "logit": _simulate_logits,
}
"""Each modelled stress test → its pilot (arm → runs or measures) and its simulation."""


def _power_at(
    result: StressResult, test: str, arm: str, fragile: int, *, alpha: float, correction: str
) -> Callable[[int], float] | None:
    """The arm's power as a function of the seeds (cached per seed count), or None."""
    pilot, simulate = SIMULATORS[test](result, fragile, alpha, correction)
    if BASELINE not in pilot or arm not in pilot:
        return None

    @functools.cache
    def at(seeds: int) -> float:
        return next(p.power for p in simulate(seeds) if p.arm == arm)

    return at
