"""The growth forecast of an instability signal and its backtest."""

from __future__ import annotations

import math

import pytest

from archaudit.stats.analyses.forecast import (
    Trace,
    backtest,
    crossing,
    depth_forecast,
    warning_step,
)


def test_crossing_of_exponential_growth():
    steps = [10, 20, 30]
    values = [math.exp(0.1 * s) for s in steps]
    assert crossing(steps, values, math.exp(5.0)) == pytest.approx(50.0)
    assert crossing(steps, [3.0, 2.0, 1.0], 10.0) == math.inf
    assert crossing(steps, [1.0, 20.0, 30.0], 10.0) == 20.0  # already there


def test_warning_and_backtest():
    grows = Trace("a", (25, 50, 75, 100), (1.0, 2.0, 4.0, 8.0), break_step=150)
    flat = Trace("b", (25, 50, 75, 100), (1.0, 1.1, 1.0, 1.05), break_step=None)
    # doubling every 25 steps reaches 64 at step 175: warned at 75 with a 100-step horizon
    assert warning_step(grows, 64.0, horizon=100) == 75
    assert warning_step(flat, 64.0, horizon=100) is None
    result = backtest("x", [grows, flat], 64.0, horizon=100)
    assert (result.broke, result.warned_in_time, result.lead_steps) == (1, 1, (75,))
    assert (result.stable, result.false_alarms, result.false_alarm_rate) == (1, 0, 0.0)


def test_points_after_the_break_are_not_used():
    late = Trace("c", (25, 50, 75), (1.0, 1.0, 1000.0), break_step=60)
    result = backtest("x", [late], 100.0, horizon=10)
    assert result.broke == 1 and result.warned_in_time == 0 and math.isnan(result.median_lead)


def test_depth_forecast():
    assert depth_forecast([2, 4], [1.0, 4.0], 64.0) == pytest.approx(8.0)
