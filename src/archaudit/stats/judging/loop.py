"""What the sequential loop records of its last look (`archaudit run --until-settled`): the
typed rows of its summary, and the vocabulary of why an arm or the loop stopped.

The loop itself (`archaudit.audit.execute.sequential`) writes these; `judge_loop`
(`archaudit.stats.judging.judgement`) turns a family of them into the one verdict record,
`Judgement`, that
`stats`, the report, `to_frame()` and the trackers render.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import StrEnum

from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.verdicts import Verdict, nominal
from archaudit.stats.simulation.sequential import (
    SequentialDesignRate,
    SequentialRule,
    repeated_interval,
)


class ArmStop(StrEnum):
    """Why an arm stopped getting seeds."""

    SETTLED = "settled"
    FUTILE = "futile"
    MAX_SEEDS = "max-seeds"
    BUDGET = "budget"
    DIVERGED = "diverged"


ARM_STOPS: dict[ArmStop, str] = {
    ArmStop.SETTLED: "crossed its boundary: improver or regressor",
    ArmStop.FUTILE: "too unlikely to cross its boundary by its last seed, or by its next one",
    ArmStop.MAX_SEEDS: "reached the most seeds an arm may get without crossing",
    ArmStop.BUDGET: "still open when the run or hour budget was spent",
    ArmStop.DIVERGED: "a run diverged",
}
"""What each reason means: the one list the summary, the table and the docs use."""


class LoopStop(StrEnum):
    """Why the loop stopped: every arm settled, every arm stopped with some of them futile, at
    their maximum or diverged, a budget was spent, or runs failed."""

    SETTLED = "settled"
    ALL_STOPPED = "all-stopped"
    BUDGET_RUNS = "budget-runs"
    BUDGET_HOURS = "budget-hours"
    FAILED = "failed"


@dataclass(frozen=True)
class LoopArm:
    """One arm of one family after the loop's last look (a row of its summary)."""

    arm: str
    seeds: int
    delta: float
    t: float
    p: float
    verdict: Verdict
    stopped: ArmStop
    se: float = math.nan
    """The standard error of its last test (Welch's, or the 6σ bound for one seed); NaN in the
    summary of an older loop."""
    df: float = math.nan
    """That test's degrees of freedom."""
    threshold: float = math.nan
    """Its last look's nominal p threshold at the family's final Holm level (its interval's)."""

    def __post_init__(self) -> None:
        # typed whether written by the loop or read back from its summary's JSON
        object.__setattr__(self, "verdict", Verdict(self.verdict))
        object.__setattr__(self, "stopped", ArmStop(self.stopped))

    def interval(self) -> tuple[float, float]:
        """The repeated confidence interval dual to its last test (Jennison & Turnbull 2000,
        ch. 9): Δ ± t_df(threshold/2)·SE, so it excludes 0 exactly when p is below its
        boundary; NaN for a summary of an older loop or an arm without a finite test."""
        needed = (self.delta, self.se, self.df, self.threshold)
        if self.seeds < 1 or not all(map(math.isfinite, needed)):
            return (math.nan, math.nan)
        return repeated_interval(self.delta, self.se, self.df, self.threshold)


@dataclass(frozen=True)
class LoopFamily:
    """One family (baseline, scale, metric) after the loop's last look."""

    baseline: str
    scale: str
    metric: str
    sigma: float
    sigma_dof: int
    baseline_seeds: int
    arms: tuple[LoopArm, ...]

    demoted: tuple[str, ...] = ()
    """Arms the loop declared but `held_to` lowered to nominal: the design is above α."""

    def held_to(self, above_alpha: bool) -> LoopFamily:
        """The family as it may be recorded and printed: under a design whose measured error
        rate is above α no arm is an improver or regressor (each is lowered to nominal), so no
        command (`run`, `status`, `stats`, the report, the trackers) can print one."""
        lowered = [a.arm for a in self.arms if nominal(a.verdict) != a.verdict]
        if not above_alpha or not lowered:
            return self
        arms = tuple(dataclasses.replace(a, verdict=nominal(a.verdict)) for a in self.arms)
        return dataclasses.replace(self, arms=arms, demoted=(*self.demoted, *lowered))


@dataclass(frozen=True)
class Loop(JsonResult):
    """The loop a sequential judgement comes from: its rounds, why it stopped, its rule and the
    measured error rate and MDE of the design (arms, rule) it ran."""

    rounds: int
    runs: int
    stop: str
    """A `LoopStop`."""
    rule: SequentialRule
    design: SequentialDesignRate | None = None
