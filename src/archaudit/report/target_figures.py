"""The figures of the report's "At the target scale" section (`stats.predict` on the audit's
ladder): a ladder plot per arm (observed Δ̂ ± seed interval at each scale, the fitted curve, the
target interval) and the backtest figure (each curve against the single-scale baseline)."""

from __future__ import annotations

import math

from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import NullLocator

from archaudit import formatting
from archaudit.report.figures import Colours, Figure, render, styled
from archaudit.stats.predictions.predict import ArmCurve, Prediction
from archaudit.stats.records.target import TargetPrediction


@styled
def ladder_plot(key: str, p: Prediction, colours: Colours) -> Figure:
    """One panel per arm: Δ̂ ± seed interval per scale, the curve and its band, the target."""
    columns = min(3, len(p.curves))
    rows = math.ceil(len(p.curves) / columns)
    fig = MplFigure(figsize=(3.4 * columns, 2.5 * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, sharex=True).ravel()
    params = [s.params for s in p.ladder.scales]
    arms = {a.arm: a for a in p.arms}
    for ax, curve in zip(axes, p.curves, strict=False):
        _ladder_panel(ax, curve, arms[curve.arm], params, colours[curve.arm].hex)
        ax.axvline(p.ladder.target.params, color="#999999", lw=0.8, ls=":")
        ticks = (*p.ladder.scales, p.ladder.target)
        ax.set_xticks([t.params for t in ticks], [t.name for t in ticks], fontsize=7, rotation=90)
        ax.xaxis.set_minor_locator(NullLocator())
    for ax in axes[len(p.curves) :]:
        ax.set_visible(False)
    fig.supxlabel("parameters (log scale)", fontsize=8)
    fig.supylabel(f"Δ {p.metric} ({formatting.BETTER_UP})", fontsize=8)
    return render(key, fig, f"Each arm's Δ {p.metric} over the ladder and at the target")


def _ladder_panel(ax, curve: ArmCurve, arm: TargetPrediction, params, colour: str) -> None:
    ax.axhline(0.0, color="#222222", lw=0.7)
    ax.errorbar(params, curve.observed, yerr=curve.seed_halfwidth, fmt="o", color=colour,
                ms=3.5, capsize=2, lw=1)  # fmt: skip
    if all(math.isfinite(v) for v in curve.fitted):
        ax.plot(curve.params, curve.fitted, color=colour, lw=1.2)
        ax.fill_between(curve.params, curve.low, curve.high, color=colour, alpha=0.15, lw=0)
    if arm.estimable:
        low, high = arm.interval
        ax.errorbar([curve.params[-1]], [arm.delta], yerr=[[arm.delta - low], [high - arm.delta]],
                    fmt="D", color=colour, ms=5, capsize=3, lw=2)  # fmt: skip
    ax.set_xscale("log")
    state = "not estimable" if not arm.estimable else "curve rejected" if curve.rejected else ""
    ax.set_title(f"{arm.arm} ({state})" if state else arm.arm, fontsize=8)
    ax.tick_params(labelsize=7)


@styled
def backtest_plot(key: str, p: Prediction) -> Figure:
    """Pairs and signs right, and coverage, of each curve's backtest, the stack's, the slope
    rule's (whose intervals print) and the single-scale baseline's."""
    tests = p.backtests()
    names = [*(b.model for b in tests), "single-scale"]
    first = tests[0]
    pairs = [b.decision_accuracy for b in tests] + [first.baseline_decision_accuracy]
    signs = [b.sign_accuracy for b in tests] + [first.baseline_sign_accuracy]
    cover = [b.coverage for b in tests] + [math.nan]
    fig = MplFigure(figsize=(5.2, 2.8), layout="constrained")
    ax = fig.subplots()
    at = range(len(names))
    ax.bar([i - 0.2 for i in at], pairs, 0.4, label="pairs ordered right", color="#1f77b4")
    ax.bar([i + 0.2 for i in at], signs, 0.4, label="signs right", color="#ff7f0e")
    ax.plot(list(at), cover, "kD", ms=5, label=f"{p.confidence:.0%} interval coverage")
    ax.axhline(p.confidence, color="#222222", lw=0.8, ls="--")
    ax.set_xticks(list(at), [n.replace("_", "-") for n in names], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_title(f"Backtest: {', '.join(first.predicted)} from the scales below", fontsize=9)
    fig.legend(loc="outside lower center", ncols=3, fontsize=7, frameon=False)
    return render(key, fig, "Backtest of each curve, the stack, the slope rule and one scale")
