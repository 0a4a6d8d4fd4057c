"""The report's figures, drawn with matplotlib and kept as SVG text. Figures are built without
pyplot, so drawing them changes neither the caller's backend nor its open figures.

Every figure is deterministic: a fixed `svg.hashsalt` and no date in the metadata, so the same
results give the same bytes. Text is drawn as paths (`svg.fonttype = "path"`), so no font is
needed to read the figures anywhere.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import multiprocessing
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec

import matplotlib
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D

from archaudit import formatting
from archaudit.audit.launcher.warm import warm_starts
from archaudit.audit.results.power_cases import PowerCase
from archaudit.report.data import Band, Curve
from archaudit.report.palette import DIVERGED_COLOUR, Colour, arm_gid
from archaudit.stats.analyses.aggregate import Aggregates
from archaudit.stats.analyses.decoupling import Decoupling
from archaudit.stats.analyses.interactions import Interactions
from archaudit.stats.analyses.transfer import ScaleTransfer
from archaudit.stats.judging.judgement import ArmVerdict, Judgement

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
}
P = ParamSpec("P")
Colours = Mapping[str, Colour]
SEED_ALPHA = 0.7


@dataclass(frozen=True)
class Figure:
    """One figure: `key` names its file and prefixes its ids; `svg` is a standalone SVG file."""

    key: str
    svg: str
    alt: str
    labels: tuple[str, ...] = ()
    """Its axis and colour-bar labels as drawn (the SVG draws text as paths): what a test reads
    to check that every signed axis says which way is better (`formatting.BETTER_UP`)."""


def styled(draw: Callable[P, Figure]) -> Callable[P, Figure]:
    """Draw under the report's style without touching the caller's global rcParams; inside a
    `drawn_apart` block, hand the drawing to its pool and return a placeholder (`drawn`)."""

    @functools.wraps(draw)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Figure:
        if _POOL:
            return _POOL[-1].submit(wrapper, *args, **kwargs)
        with matplotlib.rc_context(STYLE):
            return draw(*args, **kwargs)

    return wrapper


class DrawingPool:
    """Figures drawn by forked processes while the report's sections are laid out: `submit`
    returns a placeholder (no SVG yet, a key of its own) that `drawn` swaps for the figure.
    Each figure is drawn as it would be here (its own style, its key as the SVG hash salt), so
    the page's bytes are the same as when drawn one by one."""

    def __init__(self, workers: int) -> None:
        context = multiprocessing.get_context("fork")
        self.pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_POOL.clear)
        self.pending: dict[str, Future[Figure]] = {}

    def submit(self, draw: Callable[P, Figure], *args: P.args, **kwargs: P.kwargs) -> Figure:
        placeholder = Figure(key=f"pending-{len(self.pending)}", svg="", alt="")
        self.pending[placeholder.key] = self.pool.submit(draw, *args, **kwargs)
        return placeholder

    def drawn(self, figure: Figure) -> Figure:
        """The figure a placeholder stands for."""
        return self.pending[figure.key].result()


_POOL: list[DrawingPool] = []
"""The pool of the innermost `drawn_apart` block; empty outside one (and in its workers)."""


@contextlib.contextmanager
def drawn_apart(workers: int) -> Iterator[DrawingPool | None]:
    """Inside the block, figures are drawn by `workers` forked processes (None: one worker, or
    a platform where a fork is not safe, and figures are drawn here as they are asked for)."""
    if workers < 2 or not warm_starts():
        yield None
        return
    pool = DrawingPool(workers)
    _POOL.append(pool)
    try:
        yield pool
    finally:
        _POOL.remove(pool)
        pool.pool.shutdown(cancel_futures=True)


COLLAPSED = "constrained_layout not applied"
"""matplotlib's warning when a figure's titles, labels and legend leave its panels no room."""
LAYOUT_TRIES = 4


def render(key: str, fig: MplFigure, alt: str) -> Figure:
    """The figure as SVG, grown until its layout leaves the panels room: the warning matplotlib
    gives otherwise leaked into `run`, `report` and notebooks, and the panels it left were drawn
    squashed. Each try adds half the height (decorations stack vertically: legend rows); past
    the last (a hostile table: arm names of thousands of characters) the figure is drawn with no
    layout engine rather than not at all. The layout is the one `savefig` computes before it
    draws (one layout per try, not a test draw and then savefig's own)."""
    with matplotlib.rc_context({"svg.hashsalt": key}):
        for _ in range(LAYOUT_TRIES):
            with warnings.catch_warnings():
                warnings.filterwarnings("error", message=COLLAPSED, category=UserWarning)
                try:
                    return Figure(key=key, svg=_svg(fig), alt=alt, labels=axis_labels(fig))
                except UserWarning:
                    fig.set_size_inches(fig.get_figwidth(), fig.get_figheight() * 1.5)
        fig.set_layout_engine("none")
        return Figure(key=key, svg=_svg(fig), alt=alt, labels=axis_labels(fig))


def axis_labels(fig: MplFigure) -> tuple[str, ...]:
    """Every non-empty axis label of `fig` (a colour bar is an axis of its own) and its
    figure-wide x and y labels, in drawing order."""
    texts = [t for ax in fig.axes for t in (ax.get_xlabel(), ax.get_ylabel())]
    texts += [fig.get_supxlabel(), fig.get_supylabel()]
    return tuple(t for t in texts if t)


def _svg(fig: MplFigure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def _new(width: float, height: float, panels: int = 1) -> tuple[MplFigure, list]:
    fig = MplFigure(figsize=(width, height), layout="constrained")
    return fig, list(fig.subplots(1, panels, squeeze=False)[0])


def _hex(colours: Colours, arm: str) -> str:
    return colours[arm].hex


LEGEND_CHAR_INCHES = 0.058
"""The width of one character of the legend's 7-pt text, a little generously."""
LEGEND_HANDLE_INCHES = 0.5
"""A legend entry's marker, its padding and the gap to the next column."""


def legend_columns(labels: Sequence[str], width: float) -> int:
    """The most columns (at most 3) whose row fits `width` inches, so that a legend is never
    cut at the figure's edge. matplotlib fills a legend column by column, the first
    `len % columns` columns one entry longer."""
    for columns in range(min(len(labels), 3), 1, -1):
        sizes = [len(labels) // columns + (j < len(labels) % columns) for j in range(columns)]
        starts = [sum(sizes[:j]) for j in range(columns)]
        widths = [
            LEGEND_HANDLE_INCHES + LEGEND_CHAR_INCHES * max(map(len, labels[a : a + n]))
            for a, n in zip(starts, sizes, strict=True)
        ]
        if sum(widths) <= width - 0.2:
            return columns
    return 1


def _legend_below(fig: MplFigure, handles: Sequence[Line2D]) -> None:
    """A legend in rows below the panel (never over the data), as wide as the figure at most."""
    columns = legend_columns([str(h.get_label()) for h in handles], fig.get_figwidth())
    fig.legend(
        handles=handles, loc="outside lower center", ncols=columns, fontsize=7, frameon=False
    )


def forest_range(deltas: Sequence[float], band: float) -> tuple[float, float]:
    """The x-range of a forest panel: every Δ and the noise band, with room for intervals up to
    that span again on each side. A wider interval (one arm with few degrees of freedom) is cut
    at the edge and marked, so it cannot squash every other arm into a dot."""
    values = [x for x in (-band, band, *deltas) if math.isfinite(x)] or [-1.0, 1.0]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    return low - span, high + span


@styled
def forest(key: str, v: Judgement, colours: Colours) -> Figure:
    """One scale's arms: Δ (positive = better) as a dot, each seed as a small dot, the interval
    `judgement_text.interval_kind` names as a line, and the ±2σ noise band; sorted by Δ, one
    colour per arm. The figure grows with its legend's rows, so the panel never collapses."""
    shown = sorted((a for a in v.arms if math.isfinite(a.delta)), key=lambda a: a.delta)
    legend = _forest_legend(v)
    rows = math.ceil(len(legend) / legend_columns([str(h.get_label()) for h in legend], 5.0))
    fig, (ax,) = _new(5.0, 1.3 + 0.3 * max(len(shown), 1) + 0.15 * rows)
    ax.axvspan(-v.noise_band, v.noise_band, color="0.87", zorder=0)
    ax.axvline(0, color="0.3", lw=0.8)
    low, high = forest_range([a.delta for a in shown], v.noise_band)
    for y, a in enumerate(shown):
        _forest_arm(ax, y, a, _hex(colours, a.arm), (low, high), v.scale)
    ax.set_xlim(low, high)
    ax.set_yticks(range(len(shown)), [a.arm for a in shown], fontsize=8)
    for label, a in zip(ax.get_yticklabels(), shown, strict=True):
        label.set_color(_hex(colours, a.arm))
    ax.set_ylim(-0.7, max(len(shown), 1) - 0.3)
    ax.set_xlabel(f"Δ {v.metric} ({formatting.BETTER_UP})")
    ax.set_title(f"{v.metric} at {v.scale} (σ = {formatting.num(v.sigma)})", fontsize=9)
    _legend_below(fig, legend)
    return render(key, fig, f"Forest plot of Δ {v.metric} per arm at {v.scale}")


def _forest_legend(v: Judgement) -> list[Line2D]:
    kind = "repeated, dual to the loop's test" if v.sequential else "simultaneous (fixed design)"
    return [
        Line2D([], [], marker="o", ls="", color="0.2", label="Δ (mean of seeds)"),
        Line2D([], [], marker="o", ls="", ms=3, color="0.2", alpha=SEED_ALPHA, label="one seed"),
        Line2D([], [], color="0.2", lw=1.6, label=f"{1 - v.alpha:.0%} interval, {kind}"),
        Line2D([], [], color="0.87", lw=6, label="±2σ noise band"),
    ]


def _forest_arm(ax, y: int, a: ArmVerdict, colour: str, edges: tuple[float, float], scale: str):
    low, high = edges
    if all(map(math.isfinite, a.interval)):
        start, end = max(a.interval[0], low), min(a.interval[1], high)
        line = ax.hlines(y, start, end, colors=colour, lw=1.6)
        line.set_gid(arm_gid(a.arm, "interval", scale))
        for edge, cut, marker in (
            (low, a.interval[0] < low, "<"),
            (high, a.interval[1] > high, ">"),
        ):
            if cut:  # the interval runs on past the axis
                ax.plot(edge, y, marker=marker, color=colour, ms=5, clip_on=False)
    if a.seed_deltas:
        seeds = ax.scatter(
            [min(max(d, low), high) for d in a.seed_deltas],
            [y + 0.18] * len(a.seed_deltas),
            color=colour, s=14, alpha=SEED_ALPHA, zorder=2, linewidths=0,
        )  # fmt: skip
        seeds.set_gid(arm_gid(a.arm, "seeds", scale))
    dot = ax.scatter([a.delta], [y], color=colour, s=30, zorder=3)
    dot.set_gid(arm_gid(a.arm, "delta", scale))


@styled
def scatter(key: str, s: Decoupling, colours: Colours) -> Figure:
    """One scale: relative loss change against downstream Δ, every arm labelled in its colour;
    decoupled arms as diamonds. No "flat" band: each arm's loss has its own margin, and the
    table under the figure says which arms were shown flat."""
    fig, (ax,) = _new(5.0, 3.8)
    ax.axhline(0, color="0.3", lw=0.8)
    ax.axvline(0, color="0.3", lw=0.8)
    xs, ys = [100 * p.loss_change for p in s.arms], [p.downstream_delta for p in s.arms]
    for point, x, y in zip(s.arms, xs, ys, strict=True):
        mark = ax.scatter([x], [y], color=_hex(colours, point.arm), s=30, zorder=3,
                          marker="D" if point.decoupled else "o")  # fmt: skip
        mark.set_gid(arm_gid(point.arm, "point", s.scale))
    _label_points(ax, [p.arm for p in s.arms], xs, ys, colours)
    ax.set_xlabel(f"{s.loss_metric} change vs baseline (%, {formatting.BETTER_DOWN})")
    ax.set_ylabel(f"Δ {s.downstream_metric} ({formatting.BETTER_UP})")
    ax.set_title(f"scale {s.scale}", fontsize=9)
    _legend_below(
        fig,
        [
            Line2D([], [], marker="o", ls="", color="0.3", label="not decoupled"),
            Line2D([], [], marker="D", ls="", color="0.3", label="decoupled"),
        ],
    )
    return render(key, fig, f"Loss change against downstream effect per arm at {s.scale}")


def _label_points(ax, arms: Sequence[str], xs: Sequence[float], ys: Sequence[float], colours):
    """Each point's arm name beside it, on the side towards the middle of the panel (so that no
    label runs off the canvas), spread apart vertically and off the Δ = 0 line (a label on the
    line was struck through: post_ln at Δ 0); the leader line ends at the label's near edge,
    never through it, and a label crossing the vertical 0 line covers it. The limits make room
    for the labels."""
    x_span = (max(0.0, *xs) - min(0.0, *xs)) or 1.0
    y_span = (max(0.0, *ys) - min(0.0, *ys)) or 1.0
    middle = (max(0.0, *xs) + min(0.0, *xs)) / 2
    label_ys = off_zero(ys, 0.09 * y_span, AXIS_CLEARANCE * y_span)
    for arm, x, y, label_y in zip(arms, xs, ys, label_ys, strict=True):
        right = x <= middle
        ax.annotate(
            arm, (x, y), xytext=(x + (0.06 if right else -0.06) * x_span, label_y),
            textcoords="data", fontsize=7, color=_hex(colours, arm),
            ha="left" if right else "right", va="center", zorder=4,
            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none"},
            arrowprops={"arrowstyle": "-", "color": _hex(colours, arm), "lw": 0.5,
                        "relpos": (0.0 if right else 1.0, 0.5), "shrinkA": 1, "shrinkB": 3},
        )  # fmt: skip
    low, high = min(0.0, *ys, *label_ys), max(0.0, *ys, *label_ys)  # the baseline in view
    ax.set_ylim(low - 0.12 * y_span, high + 0.12 * y_span)
    ax.set_xlim(min(0.0, *xs) - 0.45 * x_span, max(0.0, *xs) + 0.45 * x_span)


@styled
def loss_bands(
    key: str, title: str, ylabel: str, bands: Sequence[Band], colours: Colours
) -> Figure:
    """Per arm, the mean over seeds as a line and the seeds' range as a band. A curve with one
    or two points (a run that evaluated once) gets markers: a lone point draws no line."""
    fig, (ax,) = _new(5.0, 3.4)
    for band in bands:
        colour = _hex(colours, band.arm)
        marker = "o" if len(band.steps) < 3 else None
        (line,) = ax.plot(band.steps, band.mean, color=colour, lw=1.3, marker=marker, ms=4)
        line.set_gid(arm_gid(band.arm, "mean", key))
        if band.seeds > 1:
            spread_ = (
                ax.vlines(band.steps, band.low, band.high, colors=colour, alpha=0.4, lw=3)
                if len(band.steps) == 1
                else ax.fill_between(band.steps, band.low, band.high, color=colour, alpha=0.2, lw=0)
            )
            spread_.set_gid(arm_gid(band.arm, "band", key))
    ax.set(xlabel="step", ylabel=ylabel, title=title)
    drawn = [b.arm for b in bands if any(math.isfinite(v) for v in b.mean)]
    _arm_legend(fig, drawn, colours)
    return render(key, fig, title)


def _arm_legend(fig: MplFigure, arms: Sequence[str], colours: Colours, extra=()) -> None:
    """One entry per arm that has a visible mark (no entry for a curve that drew nothing)."""
    handles = [Line2D([], [], color=_hex(colours, a), lw=2, label=a) for a in dict.fromkeys(arms)]
    _legend_below(fig, [*handles, *extra])


@styled
def grad_norms(key: str, scale: str, runs: Sequence[Curve], colours: Colours) -> Figure:
    """Gradient norm per step (log axis): one thin line per seed, an X where a run diverged."""
    fig, (ax,) = _new(5.0, 3.4)
    crosses = 0
    for run in runs:
        colour = _hex(colours, run.arm)
        marker = "o" if len(run.steps) < 3 else None
        (line,) = ax.plot(run.steps, run.grad_norm, color=colour, lw=0.8, alpha=0.8,
                          marker=marker, ms=3)  # fmt: skip
        line.set_gid(arm_gid(run.arm, "grad", scale, str(run.seed)))
        if run.diverged_step is not None:
            finite = [g for g in run.grad_norm if math.isfinite(g) and g > 0]
            ax.plot(run.diverged_step, finite[-1] if finite else 1.0, "x",
                    color=DIVERGED_COLOUR.hex, ms=9, mew=2)  # fmt: skip
            crosses += 1
    ax.set(xlabel="step", ylabel="gradient norm", title=f"gradient norm at {scale}")
    ax.set_yscale("log")
    diverged = Line2D([], [], marker="x", ls="", color=DIVERGED_COLOUR.hex, label="diverged")
    drawn = [r.arm for r in runs if any(math.isfinite(g) and g > 0 for g in r.grad_norm)]
    _arm_legend(fig, drawn, colours, (diverged,) if crosses else ())
    return render(key, fig, f"Gradient norm per seed at scale {scale}")


@styled
def bump(key: str, b: ScaleTransfer, colours: Colours) -> Figure:
    """Each arm's rank at the small and the large scale (1 = best). The names are the tick
    labels of the two sides, so the layout makes room for them (none runs off the canvas);
    they are spread apart so that tied ranks do not print over each other. Drawn only when ρ's
    interval is estimable: otherwise crossings of arms within noise would read as a reordering."""
    fig, (ax,) = _new(5.0, 1.4 + 0.34 * len(b.arms))
    left = spread([a.rank_small for a in b.arms], 0.55)
    right = spread([a.rank_large for a in b.arms], 0.55)
    for arm in b.arms:
        (line,) = ax.plot((0, 1), (arm.rank_small, arm.rank_large), "o-",
                          color=_hex(colours, arm.arm), lw=1.4)  # fmt: skip
        line.set_gid(arm_gid(arm.arm, "rank"))
    every = [*left, *right, *(a.rank_small for a in b.arms), *(a.rank_large for a in b.arms)]
    ax.set_ylim(max(every) + 0.6, min(every) - 0.6)  # rank 1 on top
    ax.set_xlim(-0.1, 1.1)
    ax.set_xticks((0, 1), (f"rank at {b.small}", f"rank at {b.large}"))
    other = ax.twinx()
    other.set_ylim(ax.get_ylim())
    for side, positions in ((ax, left), (other, right)):
        side.set_yticks(positions, [a.arm for a in b.arms], fontsize=8)
        for label, arm in zip(side.get_yticklabels(), b.arms, strict=True):
            label.set_color(_hex(colours, arm.arm))
        side.tick_params(axis="y", length=0)
        side.grid(False)
        for spine in side.spines.values():
            spine.set_visible(False)
    ax.grid(False)
    rho = formatting.estimate("Spearman ρ", b.spearman, b.spearman_interval, 2)
    ax.set_title(f"{b.metric}: {rho}", fontsize=9)
    return render(key, fig, f"Rank of each arm at {b.small} and {b.large} on {b.metric}")


AXIS_CLEARANCE = 0.06
"""How far (a share of the y span) a scatter label's centre keeps from the Δ = 0 line: more than
half a 7-pt label's height on the report's panels."""


def off_zero(values: Sequence[float], gap: float, clearance: float) -> list[float]:
    """`spread` label positions, none within `clearance` of 0: those of values ≥ 0 above it,
    the rest below it, the labels beyond a moved one moved on only as far as `gap` needs."""
    placed = [0.0] * len(values)
    for sign in (1.0, -1.0):
        group = [i for i, v in enumerate(values) if (v >= 0) == (sign > 0)]
        away = spread([sign * values[i] for i in group], gap)  # distances from 0, this side
        floor = clearance
        for k in sorted(range(len(group)), key=lambda k: away[k]):
            away[k] = max(away[k], floor)
            floor = away[k] + gap
        for i, distance in zip(group, away, strict=True):
            placed[i] = sign * distance
    return placed


def spread(values: Sequence[float], gap: float) -> list[float]:
    """Label positions as close to `values` as possible, at least `gap` apart, order kept."""
    order = sorted(range(len(values)), key=lambda i: (values[i], i))
    placed = [0.0] * len(values)
    for rank, i in enumerate(order):
        below = placed[order[rank - 1]] + gap if rank else -math.inf
        placed[i] = max(values[i], below)
    centre = sum(values) / len(values) - sum(placed) / len(placed) if values else 0.0
    return [p + centre for p in placed]


@styled
def heatmap(key: str, h: Interactions) -> Figure:
    """Main effects (diagonal) and pairwise interactions (off the diagonal), in σ."""
    factors = tuple(h.main_effects)
    n = len(factors)
    index = {f: i for i, f in enumerate(factors)}
    grid = [[math.nan] * n for _ in range(n)]
    for factor, effect in h.main_sigmas.items():
        grid[index[factor]][index[factor]] = effect
    for combo in h.combinations:
        if len(combo.factors) == 2:
            i, j = (index[f] for f in combo.factors)
            grid[i][j] = grid[j][i] = combo.interaction_sigmas
    finite = [abs(v) for row in grid for v in row if math.isfinite(v)]
    limit = max(finite, default=1.0) or 1.0
    fig, (ax,) = _new(1.8 + 0.7 * n, 1.4 + 0.6 * n)
    image = ax.imshow(grid, cmap="RdBu", vmin=-limit, vmax=limit)
    for i in range(n):
        for j in range(n):
            if math.isfinite(grid[i][j]):
                ax.text(
                    j, i, formatting.signed(grid[i][j], 2), ha="center", va="center", fontsize=7
                )
    ax.set_xticks(range(n), factors, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(n), factors, fontsize=7)
    ax.grid(False)
    fig.colorbar(image, ax=ax, label=f"interaction in σ ({formatting.BETTER_UP})")
    ax.set_title(f"{h.metric} at {h.scale}", fontsize=9)
    return render(key, fig, f"Interaction heatmap of {h.metric} at {h.scale}")


@styled
def task_aggregate(key: str, agg: Aggregates, colours: Colours) -> Figure:
    """rliable's two panels at one scale: each arm's IQM over tasks × seeds and its probability
    of improvement over the baseline, with stratified-bootstrap intervals."""
    fig, (iqm_ax, prob_ax) = _new(5.0, 1.6 + 0.3 * len(agg.arms), 2)
    shown = sorted(agg.arms, key=lambda a: a.iqm)
    for y, a in enumerate(shown):
        colour = _hex(colours, a.arm)
        for ax, value, interval, what in (
            (iqm_ax, a.iqm, a.iqm_interval, "iqm"),
            (prob_ax, a.prob_improvement, a.prob_improvement_interval, "improvement"),
        ):
            if not math.isfinite(value):
                continue  # the baseline has no P(improvement) over itself
            if all(map(math.isfinite, interval)):  # a single-seed arm has none
                ax.hlines(y, *interval, colors=colour, lw=1.6).set_gid(
                    arm_gid(a.arm, what, "interval", agg.scale)
                )
            ax.scatter([value], [y], color=colour, s=30, zorder=3).set_gid(
                arm_gid(a.arm, what, agg.scale)
            )
    iqm_ax.set_yticks(range(len(shown)), [a.arm for a in shown], fontsize=8)
    for label, a in zip(iqm_ax.get_yticklabels(), shown, strict=True):
        label.set_color(_hex(colours, a.arm))
    prob_ax.set_yticks(range(len(shown)), [""] * len(shown))
    prob_ax.axvline(0.5, color="0.4", ls="--", lw=0.8)
    prob_ax.set_xlim(0, 1)
    iqm_ax.set(xlabel="IQM of task scores", title=f"IQM at {agg.scale}")
    prob_ax.set(xlabel="P(arm > baseline)", title="probability of improvement")
    return render(
        key,
        fig,
        f"IQM and probability of improvement over {formatting.counted(len(agg.tasks), 'task')} "
        f"at {agg.scale}",
    )


@styled
def performance_profiles(key: str, agg: Aggregates, colours: Colours) -> Figure:
    """rliable's performance profiles at one scale: per arm, the share of its seeds × tasks
    scores above each threshold τ (a curve further right is better)."""
    fig, (ax,) = _new(5.0, 3.4)
    profiles = agg.profiles or {}
    for arm, profile in profiles.items():
        (line,) = ax.step(agg.profile_taus, profile, where="post", color=_hex(colours, arm), lw=1.3)
        line.set_gid(arm_gid(arm, "profile", agg.scale))
    ax.set(xlabel="task score τ", ylabel="share of runs × tasks with score > τ", ylim=(0, 1.02))
    ax.set_title(f"performance profiles at {agg.scale}", fontsize=9)
    _arm_legend(fig, list(profiles), colours)
    tasks = formatting.counted(len(agg.tasks), "task")
    return render(key, fig, f"Performance profiles over {tasks} at {agg.scale}")


SCALE_STYLES = (("#222222", "-"), ("#666666", "--"), ("#999999", "-."), ("#444444", ":"))
"""Scales in the power figure: greys and dashes, so that no scale borrows an arm's colour."""


@styled
def power_curves(key: str, metric: str, cases: Sequence[PowerCase]) -> Figure:
    """Probability of a verdict against the true effect, per design as it ran; the MDE rises
    from the axis to the curve at the target power. Scales that ran the same design share one
    curve and one MDE label (two scales of the demo once drew "MDE 7.7σ" twice on one spot)."""
    fig, (ax,) = _new(5.0, 3.6)
    target = cases[0].curve.target
    for i, (scales, case) in enumerate(same_design_groups(cases)):
        colour, dashes = SCALE_STYLES[i % len(SCALE_STYLES)]
        effects, probabilities = zip(*case.curve.points, strict=True)
        seeds = "/".join(map(str, case.arm_seeds))
        kind = "sequential loop" if case.curve.method.startswith("sequential") else "fixed design"
        names = ", ".join(scales)
        label = f"{names}: {kind}, {case.m} arms × {seeds} seeds, baseline {case.baseline_seeds}"
        (line,) = ax.plot(effects, probabilities, color=colour, ls=dashes, lw=1.5, label=label)
        line.set_gid(f"power--{'--'.join(scales)}--curve")
        mde = case.curve.mde_sigmas
        if mde is not None:
            rise = ax.vlines(mde, 0.0, target, colors=colour, linestyles=":", lw=1.2)
            rise.set_gid(f"power--{'--'.join(scales)}--mde")
            # beside its line, on the side with room: never past the canvas' right edge
            left = mde > 0.6 * max(effects)
            ax.annotate(f"MDE {formatting.num(mde, 2)}σ", (mde, 0.04 + 0.07 * i),
                        xytext=(-3 if left else 3, 0), textcoords="offset points", fontsize=7,
                        color=colour, ha="right" if left else "left")  # fmt: skip
    ax.axhline(target, color="0.5", ls="--", lw=0.8).set_gid("power--target")
    ax.set(
        xlabel=f"true effect in σ ({formatting.BETTER_UP})",
        ylabel="probability of a verdict",
        ylim=(0, 1.02),
    )
    ax.set_title(f"power on {metric} (target {target:.0%})", fontsize=9)
    fig.legend(loc="outside lower center", fontsize=7, frameon=False, ncols=1)
    return render(key, fig, f"Power against true effect for {metric}")


def same_design_groups(cases: Sequence[PowerCase]) -> list[tuple[list[str], PowerCase]]:
    """The cases with one curve, one MDE and one design, each group with its scales in order."""
    groups: dict[tuple, tuple[list[str], PowerCase]] = {}
    for case in cases:
        design = (case.curve.points, case.curve.mde_sigmas, case.curve.method, case.m,
                  case.arm_seeds, case.baseline_seeds)  # fmt: skip
        groups.setdefault(design, ([], case))[0].append(case.scale)
    return list(groups.values())


# ---------------------------------------------------------------------------------------------
# SVG text for the HTML page

_PROLOGUE = re.compile(r"\A.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_NAMESPACES = re.compile(r'\s+(?:xmlns(?::\w+)?|version)="[^"]*"')
_IDS = re.compile(r'\b(id="|href="#|url\(#)')


def inline_svg(figure: Figure) -> str:
    """The figure as an <svg> element for an HTML5 page.

    The HTML parser puts <svg> in the SVG namespace by itself, so the XML prologue, the DOCTYPE,
    the RDF metadata and the `xmlns` declarations are dropped: what remains has no URL at all.
    `xlink:href` becomes SVG 2's plain `href`, and every id gets the figure's key as a prefix so
    that the figures of one page never share an id.
    """
    svg = _METADATA.sub("", _PROLOGUE.sub("", figure.svg, count=1))
    svg = _NAMESPACES.sub("", svg).replace("xlink:href=", "href=")
    svg = _IDS.sub(lambda m: f"{m.group(1)}{figure.key}-", svg)
    label = figure.alt.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    return svg.replace("<svg", f'<svg role="img" aria-label="{label}"', 1)
