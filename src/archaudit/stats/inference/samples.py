"""One arm's values of one metric at one scale, with what is missing and what diverged."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from archaudit.names import ResultStatus
from archaudit.stats.records.table import Run, Table
from archaudit.stats.records.verdicts import DIVERGED, INCOMPLETE, Verdict


@dataclass(frozen=True, slots=True)
class ArmSample:
    """The finished seeds' values and the runs that cannot be judged."""

    arm: str
    scale: str
    values: np.ndarray
    """Values of the runs that finished and measured the metric, in seed order."""
    n_runs: int
    """Runs of this arm at this scale with any row, whatever their metric."""
    diverged: tuple[Run, ...]
    missing: tuple[int, ...]
    """Seeds that ran but have no value for the metric (not diverged)."""
    where: str
    """Where the arm's first run came from ("file:line", or its DONE), for error messages."""
    seeds: tuple[int, ...] = ()
    """The seed number of each value, in the order of `values`."""

    @property
    def status(self) -> str:
        """`diverged` when any run diverged, `incomplete` when a value is missing, else `ok`."""
        if self.diverged:
            return ResultStatus.DIVERGED
        if self.missing or len(self.values) == 0:
            return INCOMPLETE
        return ResultStatus.OK

    @property
    def unjudged(self) -> Verdict:
        """The verdict of an arm that cannot be tested: `diverged` when any run diverged, else
        `incomplete` (a missing value); a tested arm's verdict comes from its test."""
        return DIVERGED if self.diverged else INCOMPLETE

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if len(self.values) else math.nan


def sample_arm(table: Table, metric: str, scale: str, arm: str) -> ArmSample:
    """Collect one arm's metric at one scale from the table."""
    runs = table.runs(arm, scale)
    values = {row.seed: row.value for row in table.rows_for(metric, scale, arm)}
    finished = sorted(seed for seed, run in runs.items() if not run.diverged)
    measured = [seed for seed in finished if not math.isnan(values.get(seed, math.nan))]
    first = next(iter(runs.values()), None)
    return ArmSample(
        arm=arm,
        scale=scale,
        values=np.array([values[seed] for seed in measured], dtype=float),
        n_runs=len(runs),
        diverged=tuple(run for _, run in sorted(runs.items()) if run.diverged),
        missing=tuple(seed for seed in finished if seed not in measured),
        where=first.where if first else table.source,
        seeds=tuple(measured),
    )
