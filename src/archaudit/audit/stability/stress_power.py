"""What `stress --plan --pilot` says of the sweep's power: each declared test's power at the
planned seeds, from a pilot's stored stress test, and the seeds that would reach 0.8
(`stats.analyses.stress_power`; docs/stability.md)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from archaudit.audit.grid.plan import BASELINE
from archaudit.audit.setup.spec import AuditSpec
from archaudit.audit.stability.stress_result import StressResult
from archaudit.errors import DataError
from archaudit.stats.analyses import stress_power as model

PLAN_TRIALS = 200
"""Simulated sweeps per seed count: a power of 0.8 is known to ±0.06 (95%)."""


@dataclass(frozen=True)
class TestPower:
    """One declared test of the sweep, as the pilot's model gives it."""

    test: str
    """"rate" (an arm against the baseline over rates), "depth", "depth-loss" (the depth-
    sensitivity test), "logit" (the logit test), or "group" (`stress.fragile`)."""
    arm: str
    seeds: int
    power: float
    needed: int | None
    """The fewest seeds (up to `stress_power.MAX_SEEDS`) reaching 0.8; None: none does."""

    def line(self) -> str:
        needs = (
            "reached"
            if self.power >= model.TARGET_POWER
            else f"0.8 needs stress.seeds = {self.needed}"
            if self.needed
            else f"0.8 not reached by {model.MAX_SEEDS} seeds"
        )
        return (
            f"{self.test} test, {self.arm}: power {self.power:.2f} at {self.seeds} seeds ({needs})"
        )


def read_pilot(path: Path) -> StressResult:
    """A stored stress test with its runs (a stress.json, or the folder holding one)."""
    from archaudit.audit.stability.stress_result import RESULT_FILE, read_result

    result = read_result(path / RESULT_FILE if path.is_dir() else path)
    if not result.sweep_runs:
        raise DataError(
            f"{path}: the stress result stores no runs (written before the power model); "
            "run `archaudit stress` on its audit again to re-analyse it (nothing retrains)"
        )
    return result


def plan_power(
    spec: AuditSpec, pilot: StressResult, trials: int = PLAN_TRIALS
) -> tuple[TestPower, ...]:
    """Every declared test of `spec`'s sweep whose arms the pilot has: its power at
    `stress.seeds` and the seeds for 0.8."""
    settings = spec.stress
    out: list[TestPower] = []
    for test, depth in (("rate", False), ("depth", True), ("depth-loss", True)):
        runs = pilot.pilot(depth=depth)
        if BASELINE not in runs or len(runs) < 2 or (depth and not settings.depths):
            continue
        at = functools.partial(
            model.power,
            runs,
            BASELINE,
            test=test,
            alpha=settings.alpha,
            correction=settings.correction,
            trials=trials,
        )
        out += _per_arm(test, at, settings.seeds)
    logits = pilot.logit_pilot()
    if BASELINE in logits and len(logits) > 1:
        at = functools.partial(
            model.logit_power,
            logits,
            BASELINE,
            alpha=settings.alpha,
            correction=settings.correction,
            trials=trials,
        )
        out += _per_arm("logit", at, settings.seeds)
    if settings.fragile:
        out += _group(pilot, settings.fragile, settings.seeds, settings.alpha, trials)
    return tuple(out)


def _per_arm(test: str, at: Callable[[int], list[model.ArmPower]], seeds: int) -> list[TestPower]:
    """Each arm's power at `seeds`, and the fewest seeds reaching the target (one model run
    per seed count serves every arm)."""
    cache: dict[int, dict[str, float]] = {}

    def powers(n: int) -> dict[str, float]:
        if n not in cache:
            cache[n] = {p.arm: p.power for p in at(n)}
        return cache[n]

    def needed(arm: str, power: float) -> int | None:
        if power >= model.TARGET_POWER:
            return seeds
        return model.seeds_for(lambda n: powers(n)[arm], seeds + 1)

    return [
        TestPower(test, arm, seeds, power, needed(arm, power))
        for arm, power in powers(seeds).items()
    ]


def _group(
    pilot: StressResult, fragile: Sequence[str], seeds: int, alpha: float, trials: int
) -> list[TestPower]:
    runs = pilot.pilot()
    declared = [a for a in fragile if a in runs]
    others = [a for a in runs if a != BASELINE and a not in fragile]
    if not declared or not others:
        return []

    def at(n: int) -> float:
        return model.group_power(runs, declared, others, n, alpha=alpha, trials=trials)

    power = at(seeds)
    needed = seeds if power >= model.TARGET_POWER else model.seeds_for(at, seeds + 1)
    return [TestPower("group", "+".join(declared), seeds, power, needed)]


def power_json(powers: Sequence[TestPower]) -> list[dict[str, object]]:
    return [asdict(p) | {"line": p.line()} for p in powers]
