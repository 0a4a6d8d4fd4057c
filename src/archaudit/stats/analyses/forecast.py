"""Forecasting an instability from how its signals grow (docs/stability.md, "Forecast").

Wortsman et al. 2023 (§3.4) predicted instabilities before they emerged from how activation
and gradient norms scale. Here a signal logged at the eval cadence (the largest attention
logit, |log Z|, the gradient norm) is fitted as exponential growth over its last `window`
points, ln s = a + b·t; where b > 0 the fit crosses the divergence threshold θ at
t* = (ln θ − a)/b. A forecast **warns** at the first logged step t at which t* ≤ t + horizon
(or s ≥ θ already). The same fit over depth (the signal of the same rate at 1×, 2×, 4× the
layers) gives the depth at which the signal would reach θ.

`backtest` replays the forecast on finished runs with only the points logged so far: for runs
that broke, the **lead** is how many steps before the break the warning came (a warning at or
after the break is a miss); for runs that stayed stable, a warning is a **false alarm**. Its
**precision** is the share of warned runs that broke, its **recall** the share of broken runs
warned in time. A forecast is **shown** only where its backtest beats chance: its hit rate
(recall) is above its false-alarm rate by the one-sided Fisher exact test at `GATE_ALPHA` (a
forecaster that warned the same share of runs at random would hit the broken runs at its
false-alarm rate), and its precision is at least `USEFUL_PRECISION`; otherwise it is "not
useful here".

A signal can also be forecast **relative** to the baseline: the series is the run's signal over
the baseline's (its seeds' mean) at the same rate, depth and step, and the threshold a multiple
of it, so growth every arm shares at a rate (the baseline's attention logits grow with the rate
without breaking it) does not warn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

USEFUL_PRECISION = 0.5
"""A forecast whose warnings are wrong more often than right is not shown as one."""
GATE_ALPHA = 0.05
"""The level at which a backtest's hit rate must beat its false-alarm rate to be shown."""


@dataclass(frozen=True)
class Trace:
    """One run's signal at its logged steps, and when it broke (None: it stayed stable)."""

    run: str
    steps: tuple[int, ...]
    values: tuple[float, ...]
    break_step: int | None


@dataclass(frozen=True)
class Backtest:
    signal: str
    threshold: float
    horizon: int
    broke: int
    """Runs that broke and had a logged point before the break."""
    warned_in_time: int
    lead_steps: tuple[int, ...]
    """Per run warned in time: break step − warning step."""
    stable: int
    false_alarms: int
    relative: bool = False
    """The threshold is a multiple of the baseline's own signal at the same rate, depth and
    step (the baseline's runs are the reference, not replayed)."""

    @property
    def false_alarm_rate(self) -> float:
        return self.false_alarms / self.stable if self.stable else math.nan

    @property
    def precision(self) -> float:
        """Of the runs it warned (before any break), the share that broke (NaN: none)."""
        warned = self.warned_in_time + self.false_alarms
        return self.warned_in_time / warned if warned else math.nan

    @property
    def recall(self) -> float:
        """Of the runs that broke, the share it warned in time (NaN: none broke)."""
        return self.warned_in_time / self.broke if self.broke else math.nan

    @property
    def gate_p(self) -> float:
        """One-sided Fisher exact p that the runs that broke were warned more often than the
        stable ones (1 when none broke or none stayed stable: nothing to beat)."""
        if not self.broke or not self.stable:
            return 1.0
        table = [
            [self.warned_in_time, self.broke - self.warned_in_time],
            [self.false_alarms, self.stable - self.false_alarms],
        ]
        return float(sps.fisher_exact(table, alternative="greater").pvalue)

    @property
    def useful(self) -> bool:
        """Its hit rate beats its false-alarm rate (`gate_p` < `GATE_ALPHA`) and its warnings
        are right at least `USEFUL_PRECISION` of the time; otherwise the table says "not useful
        here" instead of printing them."""
        return self.gate_p < GATE_ALPHA and self.precision >= USEFUL_PRECISION

    @property
    def median_lead(self) -> float:
        return float(np.median(self.lead_steps)) if self.lead_steps else math.nan


def crossing(xs: Sequence[float], values: Sequence[float], threshold: float) -> float:
    """Where the exponential fit of `values` over `xs` reaches `threshold`: inf when it does
    not grow, the first x when a value is already there."""
    x = np.asarray(xs, dtype=float)
    v = np.asarray(values, dtype=float)
    if np.any(v >= threshold):
        return float(x[np.argmax(v >= threshold)])
    ok = np.isfinite(v) & (v > 0)
    if ok.sum() < 2:
        return math.inf
    slope, intercept = np.polyfit(x[ok], np.log(v[ok]), 1)
    if slope <= 0:
        return math.inf
    return float((math.log(threshold) - intercept) / slope)


def warning_step(trace: Trace, threshold: float, horizon: int, window: int = 3) -> int | None:
    """The first logged step at which the forecast from the points so far warns."""
    for i, step in enumerate(trace.steps):
        lo = max(0, i + 1 - window)
        if i + 1 < 2 and trace.values[i] < threshold:
            continue
        when = crossing(trace.steps[lo : i + 1], trace.values[lo : i + 1], threshold)
        if when <= step + horizon:
            return step
    return None


def backtest(
    signal: str,
    traces: Sequence[Trace],
    threshold: float,
    horizon: int,
    window: int = 3,
    relative: bool = False,
) -> Backtest:
    """Replay the forecast on every trace (only points logged before a break count)."""
    leads: list[int] = []
    broke = stable = false_alarms = 0
    for trace in traces:
        if trace.break_step is None:
            stable += 1
            false_alarms += warning_step(trace, threshold, horizon, window) is not None
            continue
        before = [i for i, s in enumerate(trace.steps) if s < trace.break_step]
        if not before:
            continue
        broke += 1
        cut = Trace(trace.run, trace.steps[: len(before)], trace.values[: len(before)], None)
        warned = warning_step(cut, threshold, horizon, window)
        if warned is not None:
            leads.append(trace.break_step - warned)
    return Backtest(
        signal, threshold, horizon, broke, len(leads), tuple(leads), stable, false_alarms, relative
    )


def depth_forecast(layers: Sequence[int], values: Sequence[float], threshold: float) -> float:
    """The depth (layers) at which the exponential fit over depth reaches `threshold`."""
    return crossing(layers, values, threshold)
