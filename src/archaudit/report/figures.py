"""The report's figures, drawn with matplotlib and kept as SVG text. Figures are built without
pyplot, so drawing them changes neither the caller's backend nor its open figures.

Every figure is deterministic: a fixed `svg.hashsalt` and no date in the metadata, so the same
results give the same bytes. Text is drawn as paths (`svg.fonttype = "path"`), so no font is
needed to read the figures anywhere.
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ParamSpec

import matplotlib
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D

from archaudit.report.data import Bump, Curve, Heatmap, PowerCase, Scatter, Verdicts

STYLE = {
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
}
PALETTE = "tab10"
NO_FAMILY = "no family"
P = ParamSpec("P")


@dataclass(frozen=True)
class Figure:
    """One figure: `key` names its file and prefixes its ids; `svg` is a standalone SVG file."""

    key: str
    svg: str
    alt: str


def styled(draw: Callable[P, Figure]) -> Callable[P, Figure]:
    """Draw under the report's style without touching the caller's global rcParams."""

    @functools.wraps(draw)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Figure:
        with matplotlib.rc_context(STYLE):
            return draw(*args, **kwargs)

    return wrapper


def render(key: str, fig: MplFigure, alt: str) -> Figure:
    with matplotlib.rc_context({"svg.hashsalt": key}):
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return Figure(key=key, svg=buffer.getvalue(), alt=alt)


def _new(width: float, height: float, panels: int = 1) -> tuple[MplFigure, list]:
    fig = MplFigure(figsize=(width, height), layout="constrained")
    return fig, list(fig.subplots(1, panels, squeeze=False)[0])


def family_colours(families: Sequence[str | None]) -> dict[str, tuple]:
    """One colour per family, by sorted name, so the same family has the same colour in every
    figure of a report."""
    cmap = matplotlib.colormaps[PALETTE]
    names = sorted({f or NO_FAMILY for f in families})
    return {name: cmap(i % cmap.N) for i, name in enumerate(names)}


def _family_legend(fig: MplFigure, colours: dict[str, tuple]) -> None:
    """The family colours, in one row below the panels (never over the data)."""
    handles = [Line2D([], [], marker="o", ls="", color=c, label=n) for n, c in colours.items()]
    fig.legend(
        handles=handles, loc="outside lower center", ncols=min(len(handles), 5), fontsize=7,
        frameon=False,
    )  # fmt: skip


def forest_range(deltas: Sequence[float], band: float) -> tuple[float, float]:
    """The x-range of a forest panel: every Δ and the noise band, with room for intervals up to
    that span again on each side. A wider interval (one arm with few degrees of freedom) is cut
    at the edge and marked, so it cannot squash every other arm into a dot."""
    values = [x for x in (-band, band, *deltas) if math.isfinite(x)] or [-1.0, 1.0]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    return low - span, high + span


@styled
def forest(key: str, panels: Sequence[Verdicts]) -> Figure:
    """Each arm's Δ (positive = better) with its simultaneous interval and the ±2σ noise band,
    one panel per scale; arms sorted by Δ and coloured by family."""
    colours = family_colours([a.family for v in panels for a in v.arms])
    rows = max(len(v.arms) for v in panels)
    fig, axes = _new(4.2 * len(panels), 1.2 + 0.28 * rows, len(panels))
    for ax, v in zip(axes, panels, strict=True):
        shown = sorted((a for a in v.arms if math.isfinite(a.delta)), key=lambda a: a.delta)
        ax.axvspan(-v.noise_band, v.noise_band, color="0.85", zorder=0, label="±2σ noise")
        ax.axvline(0, color="0.3", lw=0.8)
        ys = range(len(shown))
        dots = [colours[a.family or NO_FAMILY] for a in shown]
        low, high = forest_range([a.delta for a in shown], v.noise_band)
        for y, a, colour in zip(ys, shown, dots, strict=True):
            if a.interval is None:
                continue
            start, end = max(a.interval[0], low), min(a.interval[1], high)
            ax.hlines(y, start, end, colors=colour, lw=1.6)
            for edge, cut, marker in (
                (low, a.interval[0] < low, "<"),
                (high, a.interval[1] > high, ">"),
            ):
                if cut:  # the interval runs on past the axis
                    ax.plot(edge, y, marker=marker, color=colour, ms=5, clip_on=False)
        ax.set_xlim(low, high)
        ax.scatter([a.delta for a in shown], ys, c=dots, s=25, zorder=3)
        ax.set_yticks(range(len(shown)), [a.arm for a in shown], fontsize=7)
        ax.set_ylim(-0.7, max(len(shown), 1) - 0.3)
        ax.set_xlabel(f"Δ {v.metric} (positive = better)")
        ax.set_title(f"{v.metric} at {v.scale} (σ = {v.sigma:.3g})", fontsize=9)
    _family_legend(fig, colours)
    return render(key, fig, f"Forest plot of Δ {panels[0].metric} per arm and scale")


@styled
def scatter(key: str, panels: Sequence[Scatter]) -> Figure:
    """Relative loss change against downstream Δ; decoupled arms labelled."""
    colours = family_colours([p.family for s in panels for p in s.points])
    fig, axes = _new(4.2 * len(panels), 3.6, len(panels))
    for ax, s in zip(axes, panels, strict=True):
        ax.axvspan(-100 * s.loss_band, 100 * s.loss_band, color="0.9", zorder=0)
        ax.axhline(0, color="0.3", lw=0.8)
        for decoupled, marker in ((False, "o"), (True, "D")):
            points = [p for p in s.points if p.decoupled == decoupled]
            ax.scatter(
                [100 * p.loss_change for p in points],
                [p.downstream_delta for p in points],
                c=[colours[p.family or NO_FAMILY] for p in points],
                marker=marker,
                s=25,
                zorder=3,
            )
        for point in s.points:
            if point.decoupled:
                xy = (100 * point.loss_change, point.downstream_delta)
                ax.annotate(point.arm, xy, xytext=(4, 4), textcoords="offset points", fontsize=7)
        ax.set_xlabel(f"{s.loss_metric} change vs baseline (%)")
        ax.set_ylabel(f"Δ {s.downstream_metric} (positive = better)")
        ax.set_title(f"scale {s.scale}", fontsize=9)
    _family_legend(fig, colours)
    return render(key, fig, "Loss change against downstream effect per arm")


@styled
def curves(key: str, scale: str, runs: Sequence[Curve]) -> Figure:
    """Loss and gradient norm per step at one scale: one colour per arm, each seed a thin line,
    an X where a run diverged."""
    arms = list(dict.fromkeys(c.arm for c in runs))
    cmap = matplotlib.colormaps["tab20"]
    colour = {arm: cmap(i % cmap.N) for i, arm in enumerate(arms)}
    fig, (loss_ax, grad_ax) = _new(9.0, 3.6, 2)
    for run in runs:
        for ax, values in ((loss_ax, run.loss), (grad_ax, run.grad_norm)):
            ax.plot(run.steps, values, color=colour[run.arm], lw=0.8, alpha=0.8)
            if run.diverged_step is not None:
                finite = [v for v in values if math.isfinite(v)]
                ax.plot(
                    run.diverged_step,
                    finite[-1] if finite else 0.0,
                    "x",
                    color="tab:red",
                    ms=9,
                    mew=2,
                )
    loss_ax.set(xlabel="step", ylabel="training loss", title=f"loss at {scale}")
    grad_ax.set(xlabel="step", ylabel="gradient norm", title=f"gradient norm at {scale}")
    grad_ax.set_yscale("log")
    handles = [Line2D([], [], color=colour[a], label=a) for a in arms]
    handles.append(Line2D([], [], marker="x", ls="", color="tab:red", label="diverged"))
    loss_ax.legend(handles=handles, fontsize=6, frameon=False, loc="upper right", ncols=2)
    return render(key, fig, f"Training loss and gradient norm per arm at scale {scale}")


@styled
def bump(key: str, b: Bump) -> Figure:
    """Each arm's rank at the small and the large scale (1 = best)."""
    colours = family_colours([a.family for a in b.arms])
    fig, (ax,) = _new(5.0, 1.2 + 0.3 * len(b.arms))
    for arm in b.arms:
        colour = colours[arm.family or NO_FAMILY]
        ax.plot((0, 1), (arm.rank_small, arm.rank_large), "o-", color=colour, lw=1.4)
        ax.annotate(arm.arm, (0, arm.rank_small), xytext=(-6, 0), textcoords="offset points",
                    ha="right", va="center", fontsize=8)  # fmt: skip
        ax.annotate(arm.arm, (1, arm.rank_large), xytext=(6, 0), textcoords="offset points",
                    ha="left", va="center", fontsize=8)  # fmt: skip
    ax.set_xticks((0, 1), (f"rank at {b.small}", f"rank at {b.large}"))
    ax.set_xlim(-0.6, 1.6)
    ax.set_yticks([])
    ax.invert_yaxis()
    ax.grid(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    interval = (
        f" [{b.spearman_interval[0]:.2f}, {b.spearman_interval[1]:.2f}]"
        if b.spearman_interval
        else ""
    )
    ax.set_title(f"{b.metric}: Spearman ρ = {b.spearman:.2f}{interval}", fontsize=9)
    return render(key, fig, f"Rank of each arm at {b.small} and {b.large} on {b.metric}")


@styled
def heatmap(key: str, h: Heatmap) -> Figure:
    """Main effects (diagonal) and pairwise interactions (off the diagonal), in σ."""
    n = len(h.factors)
    index = {f: i for i, f in enumerate(h.factors)}
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
                ax.text(j, i, f"{grid[i][j]:+.1f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(n), h.factors, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(n), h.factors, fontsize=7)
    ax.grid(False)
    fig.colorbar(image, ax=ax, label="σ (positive = better)")
    ax.set_title(f"{h.metric} at {h.scale}", fontsize=9)
    return render(key, fig, f"Interaction heatmap of {h.metric} at {h.scale}")


@styled
def power_curves(key: str, metric: str, cases: Sequence[PowerCase], target: float) -> Figure:
    """Probability that an arm gets a verdict against its true effect, per scale's design."""
    fig, (ax,) = _new(5.0, 3.2)
    for case in cases:
        effects, probabilities = zip(*case.curve, strict=True)
        label = f"{case.scale}: {case.arm_seeds} seed(s)/arm, {case.baseline_seeds} baseline"
        (line,) = ax.plot(effects, probabilities, lw=1.4, label=label)
        if case.mde_sigmas is not None:
            ax.axvline(case.mde_sigmas, color=line.get_color(), ls=":", lw=1)
    ax.axhline(target, color="0.4", ls="--", lw=0.8)
    ax.set(xlabel="true effect (in σ)", ylabel="probability of a verdict", ylim=(0, 1.02))
    ax.set_title(f"power on {metric}", fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    return render(key, fig, f"Power against true effect for {metric}")


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
