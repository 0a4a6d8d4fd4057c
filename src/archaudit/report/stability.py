"""The report's stability section: the stress test of `archaudit stress` (docs/stability.md).

Wortsman et al. 2023's figure 1 (final loss against the learning rate, one colour per arm), the
sensitivity forest (each arm's LR sensitivity with its interval, the baseline's as a band), the
attention-logit and log Z traces of the runs that broke, and the per-arm table with verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.lines import Line2D

from archaudit.audit.results.findings_record import StabilityRow
from archaudit.audit.stability.stress_result import SignalTrace, StressResult
from archaudit.formatting import num, pvalue
from archaudit.report.blocks import Grid, Paragraph, Row, Section
from archaudit.report.figures import Colours, Figure, _arm_legend, _hex, _new, render, styled
from archaudit.report.palette import DIVERGED_COLOUR, arm_gid

TITLE = "Stability under a learning-rate sweep"
INTRO = (
    "Each arm trained at small scale over a grid of peak learning rates (the shared recipe "
    "otherwise). LR sensitivity is Wortsman et al.'s mean excess of the final loss over the "
    "best one across the grid (a broken run counts as the initial loss): lower is more "
    "robust. A run is stable when it neither diverged, warned of a rising gradient norm, nor "
    "collapsed (above the recipe's rate, ending at or above the unigram loss)."
)
TRACED = 6
"""At most this many broken runs are traced (the highest rates first)."""


def stability(result: StressResult | None, colours: Colours) -> Section:
    if result is None or not result.arms:
        reason = "no stress test: run `archaudit stress AUDIT` (docs/stability.md)"
        return Section("stability", TITLE, INTRO, absent=reason)
    broke = _broken(result.traces)
    figures: list[Figure] = [lr_curves(result, colours), sensitivity_forest(result, colours)]
    blocks: list = [Paragraph(result.cost), Row(tuple(figures)), _table(result)]
    declared = _declared_table(result)
    if declared.rows:
        blocks.append(declared)
    if broke:
        blocks.append(
            Row(
                (
                    traces("stability-attn", broke, "attn_logit_max", colours),
                    traces("stability-logz", broke, "log_z_max", colours),
                )
            )
        )
    blocks.append(_backtest_table(result))
    return Section("stability", TITLE, INTRO, tuple(blocks))


def _broken(traces: Sequence[SignalTrace]) -> list[SignalTrace]:
    broke = [t for t in traces if t.break_step is not None and t.steps]
    return sorted(broke, key=lambda t: (-t.lr, t.arm, t.seed))[:TRACED]


def _table(result: StressResult) -> Grid:
    verdicts = {v.arm: v for v in result.verdicts}
    rows = []
    for a in result.arms:
        v = verdicts.get(a.arm)
        lo, hi = a.sensitivity_interval
        low, high = a.largest_stable_range
        rows.append(
            (
                a.arm,
                f"{num(a.sensitivity, 3)} [{num(lo, 3)}, {num(hi, 3)}]",
                f"{_lr(a.largest_stable_lr)} [{_lr(low)}, {_lr(high)}]",
                _lr(a.best_lr),
                f"{sum(a.unstable)}/{a.seeds * len(a.lrs)}",
                ""
                if v is None
                else f"{pvalue(v.p_sensitivity_adjusted)}, {pvalue(v.p_stability_adjusted)}",
                "reference" if v is None else v.verdict,
            )
        )
    caption = "Per arm: LR sensitivity [95% interval], largest stable rate [seeds' range]"
    if result.verdicts:
        v = result.verdicts[0]
        caption += (
            f"; p-values {v.correction}-corrected over the arms ({v.error_rate} ≤ {v.alpha:g})"
        )
    columns = (
        "arm",
        "LR sensitivity",
        "largest stable LR",
        "best LR",
        "unstable runs",
        "p (sensitivity, stability)",
        "verdict",
    )
    return Grid(caption, columns, tuple(rows))


DECLARED_TESTS = {
    "stability/depth": "depth: the runs at the deeper models",
    "stability/depth-loss": "depth sensitivity: the loss's rise with depth (ΔD)",
    "stability/logits": "logits: attention logit and |log Z| at the upper rates",
}
"""The stress test's declared tests besides the rate sweep, in words (`StabilityRow.metric`)."""


def _declared_table(result: StressResult) -> Grid:
    """Every declared test besides the rate sweep, from the rows `stats` prints and the
    trackers log, and the group test's one verdict."""
    rows = [
        (DECLARED_TESTS[r.metric], r.arm, r.measure, pvalue(r.p_adj), r.verdict)
        for r in StabilityRow.of(result)
        if r.metric in DECLARED_TESTS
    ]
    if (g := result.group) is not None:
        group = f"{', '.join(g.fragile)} against {', '.join(g.others)}"
        rows.append(("group: the declared fragile arms", group, g.measure, pvalue(g.p), g.verdict))
    caption = "Declared tests beyond the rate sweep (p corrected over each test's arms)"
    columns = ("test", "arm", "deciding measure", "p (corrected)", "verdict")
    return Grid(caption, columns, tuple(rows))


def _backtest_table(result: StressResult) -> Grid:
    rows = tuple(
        (
            b.signal,
            f"{b.threshold:g}",
            str(b.broke),
            str(b.warned_in_time),
            num(b.median_lead, 3) if b.useful else "not useful here",
            f"{b.false_alarms}/{b.stable}",
        )
        for b in result.backtests
    )
    columns = (
        "signal",
        "threshold",
        "runs that broke",
        "warned in time",
        "median lead (steps)",
        "false alarms",
    )
    return Grid("Forecast backtest: the signal's growth fitted over steps", columns, rows)


def _lr(value: float | None) -> str:
    return "none" if value is None else f"{value:.3g}"


@styled
def lr_curves(result: StressResult, colours: Colours) -> Figure:
    """Final loss (min with the initial loss) against the peak rate, one line per arm."""
    fig, (ax,) = _new(5.0, 3.4)
    for a in result.arms:
        (line,) = ax.plot(a.lrs, a.mean_loss, "o-", color=_hex(colours, a.arm), lw=1.3, ms=3)
        line.set_gid(arm_gid(a.arm, "lr-curve"))
    ax.set_xscale("log")
    ax.set(
        xlabel="peak learning rate",
        ylabel="final loss (min with initial)",
        title="final loss against the learning rate",
    )
    _arm_legend(fig, [a.arm for a in result.arms], colours)
    return render("stability-lr", fig, "Final loss against the peak learning rate per arm")


@styled
def sensitivity_forest(result: StressResult, colours: Colours) -> Figure:
    """Each arm's LR sensitivity with its 95% interval; the baseline's interval as a band."""
    arms = list(result.arms)
    fig, (ax,) = _new(5.0, 1.2 + 0.35 * len(arms))
    base = result.arm(result.verdicts[0].baseline) if result.verdicts else None
    if base is not None and all(math.isfinite(x) for x in base.sensitivity_interval):
        ax.axvspan(*base.sensitivity_interval, color="#999999", alpha=0.25, lw=0)
    for y, a in enumerate(reversed(arms)):
        colour = _hex(colours, a.arm)
        lo, hi = a.sensitivity_interval
        if math.isfinite(lo) and math.isfinite(hi):
            ax.plot([lo, hi], [y, y], color=colour, lw=1.5)
        (dot,) = ax.plot([a.sensitivity], [y], "o", color=colour, ms=5)
        dot.set_gid(arm_gid(a.arm, "sensitivity"))
    ax.set_yticks(range(len(arms)), [a.arm for a in reversed(arms)])
    ax.set(xlabel="LR sensitivity (lower = more robust)", title="LR sensitivity per arm")
    return render("stability-forest", fig, "LR sensitivity per arm with 95% intervals")


@styled
def traces(key: str, broke: Sequence[SignalTrace], signal: str, colours: Colours) -> Figure:
    """A signal over steps for the runs that broke; an X at each break."""
    fig, (ax,) = _new(5.0, 3.4)
    for t in broke:
        values = t.signals[signal]
        colour = _hex(colours, t.arm) if t.arm in colours else "#444444"
        (line,) = ax.plot(t.steps, values, color=colour, lw=1.0)
        line.set_gid(arm_gid(t.arm, signal, f"{t.lr:g}", str(t.seed)))
        at = min(range(len(t.steps)), key=lambda i: abs(t.steps[i] - (t.break_step or 0)))
        if t.break_step is not None and math.isfinite(values[at]):
            ax.plot(t.break_step, values[at], "x", color=DIVERGED_COLOUR.hex, ms=8, mew=2)
    label = {"attn_logit_max": "largest attention logit", "log_z_max": "largest |log Z|"}
    ax.set(
        xlabel="step",
        ylabel=label.get(signal, signal),
        title=f"{label.get(signal)}: runs that broke",
    )
    ax.set_yscale("log")
    mark = Line2D([], [], marker="x", ls="", color=DIVERGED_COLOUR.hex, label="broke")
    _arm_legend(fig, [t.arm for t in broke], colours, (mark,))
    return render(key, fig, f"{label.get(signal)} over steps of the runs that broke")
