"""The figures' rendering defects of issue 32 (item 6), measured on the drawn matplotlib figure:
labels and legends inside the canvas, leader lines that end at their label instead of crossing
it, a curve with one evaluation still visible, no legend entry for a curve that drew nothing,
no layout warning, and no rank chart where ρ is not estimable."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.text import Annotation, Text
from report_helpers import fake_audit

from archaudit.audit.grid import store
from archaudit.report import Report, figures
from archaudit.report.data import Band, Curve, gather
from archaudit.report.palette import arm_colours
from archaudit.report.sections import Notice, Paragraph, curves, transfer
from archaudit.stats.analyses.decoupling import ArmDecoupling, Decoupling
from archaudit.stats.analyses.transfer import ArmTransfer, ScaleTransfer
from archaudit.stats.records.verdicts import WITHIN_NOISE

LONG = ("baseline", "gated_attn_headwise", "qk_norm", "softpick_with_a_long_name", "x")


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[MplFigure]:
    """Every matplotlib figure the report draws while the test runs, drawn with Agg."""
    kept: list[MplFigure] = []
    render = figures.render

    def keep(key: str, fig: MplFigure, alt: str) -> figures.Figure:
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        kept.append(fig)
        return render(key, fig, alt)

    monkeypatch.setattr(figures, "render", keep)
    return kept


def inside(box, canvas, slack: float = 3.0) -> bool:
    """Within the canvas, give or take the few pixels of a glyph box's padding."""
    return (
        box.x0 >= canvas.x0 - slack
        and box.y0 >= canvas.y0 - slack
        and box.x1 <= canvas.x1 + slack
        and box.y1 <= canvas.y1 + slack
    )


def texts(fig: MplFigure) -> list[Text]:
    """Every text the figure draws: titles, axis labels, annotations, legends, and the tick
    labels of ticks inside the view (matplotlib keeps, but does not draw, the others)."""
    found = [*fig.texts, *(t for legend in fig.legends for t in legend.get_texts())]
    for ax in fig.axes:
        found += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            low, high = sorted(limits)
            for tick in axis.get_major_ticks():
                if low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                    found += [tick.label1, tick.label2]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def test_scatter_labels_stay_on_the_canvas_and_are_not_struck_through(drawn) -> None:
    colours = arm_colours(LONG, "baseline")
    side = (WITHIN_NOISE, False, 0.1)  # verdict, flat, margin
    points = tuple(
        ArmDecoupling(
            arm,
            None,
            change,
            *side,
            "moved",
            0.0,
            delta,
            0.0,
            *side,
            "flat not testable",
            False,
            None,
        )
        for arm, change, delta in (
            ("gated_attn_headwise", 0.031, -0.18),
            ("qk_norm", -0.004, 0.0),
            ("softpick_with_a_long_name", 0.006, 0.0004),
            ("x", -0.005, 0.0003),
        )
    )
    figures.scatter("s", Decoupling("val_loss", "downstream_avg", None, "d64", points, ()), colours)
    (fig,) = drawn
    renderer = fig.canvas.get_renderer()
    for text in texts(fig):
        assert inside(text.get_window_extent(renderer), fig.bbox), text.get_text()
    annotations = [a for a in fig.findobj(Annotation)]
    assert len(annotations) == 4
    for note in annotations:
        label = Text.get_window_extent(note, renderer)  # the text alone, not its arrow
        leader = note.arrow_patch.get_window_extent(renderer)
        overlap = min(label.x1, leader.x1) - max(label.x0, leader.x0)
        assert overlap <= 2.0, f"the leader line of {note.get_text()} crosses its label"
        # issue 46: post_ln at Δ 0 had its name on the zero line, struck through
        zero = fig.axes[0].transData.transform((0.0, 0.0))[1]
        assert not label.y0 < zero < label.y1, f"{note.get_text()} sits on the Δ = 0 line"
        assert note.get_bbox_patch() is not None  # it covers the vertical 0 line it may cross


def test_bump_names_stay_on_the_canvas_and_rho_is_in_the_title(drawn) -> None:
    colours = arm_colours(LONG, "baseline")
    arms = tuple(
        ArmTransfer(
            a,
            0.0,
            0.0,
            True,
            r,
            5 - r,
            5 - 2 * r,
            (r, r),
            (5 - r, 5 - r),
            WITHIN_NOISE,
            WITHIN_NOISE,
        )
        for r, a in enumerate(LONG[1:], 1)
    )
    transfer = ScaleTransfer("acc", "baseline", "d48", "d64", len(arms), 0.5, -0.8, (-1.0, -0.2),
                             -0.6, (-1.0, 0.0), 0.95, arms, (), ())  # fmt: skip
    figures.bump("b", transfer, colours)
    (fig,) = drawn
    renderer = fig.canvas.get_renderer()
    shown = [t.get_text() for t in texts(fig)]
    for arm in LONG[1:]:
        assert shown.count(arm) == 2  # at both sides
    for text in texts(fig):
        assert inside(text.get_window_extent(renderer), fig.bbox), text.get_text()
    assert "acc: Spearman ρ = -0.8 [-1, -0.2]" in shown


def test_no_rank_chart_where_rho_is_not_estimable(audit_report: Report) -> None:
    data = audit_report.data
    nan = float("nan")
    bump = dataclasses.replace(
        data.findings.transfers[0], spearman=0.0, spearman_interval=(nan, nan)
    )
    found = dataclasses.replace(data.findings, transfers=(bump,))
    section = transfer(dataclasses.replace(data, findings=found))
    assert not any(isinstance(b, figures.Figure) for b in section.blocks)
    (notice,) = [b for b in section.blocks if isinstance(b, Notice)]
    assert "not estimable" in notice.text and "no chart" in notice.text
    said = "\n".join(b.text for b in section.blocks if isinstance(b, Notice | Paragraph))
    assert "ρ = 0" not in said and "Spearman ρ not estimable" in said


@pytest.mark.parametrize("sequential", [False, True])
def test_the_forest_legend_fits_the_figure(drawn, audit_report: Report, sequential) -> None:
    from archaudit.stats.judging.loop import Loop
    from archaudit.stats.simulation.sequential import SequentialRule

    v = audit_report.data.verdicts[0]
    if sequential:  # the longest legend: "95% interval, repeated, dual to the loop's test"
        rule = SequentialRule(alpha=0.05, max_seeds=3, baseline_seeds=3)
        v = dataclasses.replace(v, sequential=Loop(rounds=2, runs=14, stop="settled", rule=rule))
    figures.forest("f", v, audit_report.data.colours)
    (fig,) = drawn
    renderer = fig.canvas.get_renderer()
    (legend,) = fig.legends
    assert inside(legend.get_window_extent(renderer), fig.bbox)
    labels = [t.get_text() for t in legend.get_texts()]
    assert "±2σ noise band" in labels


def test_a_curve_with_one_evaluation_is_visible(drawn) -> None:
    colours = arm_colours(["baseline", "x"], "baseline")
    bands = (
        Band("baseline", "d48", 2, (50,), (3.1,), (3.0,), (3.2,)),
        Band("x", "d48", 1, (50,), (3.0,), (3.0,), (3.0,)),
    )
    figures.loss_bands("v", "validation loss", "loss", bands, colours)
    (fig,) = drawn
    lines = [line for line in fig.axes[0].get_lines() if line.get_gid()]
    assert len(lines) == 2
    assert all(line.get_marker() not in (None, "None", "") for line in lines)


def test_a_validation_loss_of_one_dot_per_arm_says_why(tmp_path: Path) -> None:
    """Issue 46: runs shorter than eval_every drew one dot per arm with no word of why."""
    (tmp_path / "short").mkdir()
    (tmp_path / "long").mkdir()
    audit = fake_audit(tmp_path / "short", {"qk_norm": 0.0})
    for log in sorted(audit.glob(f"*/*/seed-*/{store.METRICS}")):
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        last = rows[-1]["step"]
        for row in rows[:-1]:
            row.pop("val_loss", None)  # the trainer's one evaluation, at the end
        log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    said = [b.text for b in curves(gather(audit)).blocks if isinstance(b, Paragraph)]
    assert said and all(f"one evaluation per run (step {last})" in text for text in said)
    assert not [b for b in curves(gather(fake_audit(tmp_path / "long", {"qk_norm": 0.0}))).blocks
                if isinstance(b, Paragraph)]  # fmt: skip


def test_no_legend_entry_for_a_curve_that_drew_nothing(drawn) -> None:
    colours = arm_colours(["baseline", "x"], "baseline")
    runs = (
        Curve("baseline", None, "d48", 0, (1, 2, 3), (3.0, 2.9, 2.8), (1.0, 0.9, 0.8), None),
        Curve("x", None, "d48", 0, (1, 2, 3), (3.0, 2.9, 2.8), (math.nan,) * 3, None),
    )
    figures.grad_norms("g", "d48", runs, colours)
    (fig,) = drawn
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["baseline"]  # no "x" (no finite gradient norm), no "diverged"


def test_drawing_a_report_warns_nothing_and_keeps_every_text_on_its_canvas(
    drawn, tmp_path: Path
) -> None:
    """matplotlib's constrained_layout warning leaked into `run`, `report` and notebooks; labels
    (the power figure's "MDE 17σ", the rank chart's names) ran off the canvas."""
    from archaudit.report import build_report

    audit = fake_audit(tmp_path, {"qk_norm": -0.02, "post_ln": 0.1, "softpick": 0.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_report(audit)
    assert len(drawn) >= 10
    for fig in drawn:
        renderer = fig.canvas.get_renderer()
        for text in texts(fig):
            assert inside(text.get_window_extent(renderer), fig.bbox), text.get_text()


def test_the_decoupling_claim_reads_the_verdicts_the_answer_shows(tmp_path: Path) -> None:
    """For a sequential audit, "loss moved" must be the loop's verdict (the answer's), not a
    fixed-design re-analysis' (issue 32: post_ln at d64)."""
    audit = fake_audit(tmp_path, {"qk_norm": 0.0, "geglu": 0.0, "softpick": 0.0})
    fixed = {s.scale: s for s in gather(audit).findings.decouplings}
    assert {p.loss_status for p in fixed["d48"].arms} != {"moved"}
    rows = [
        {"arm": arm, "p": 1e-4, "t": 10.0, "verdict": "improver", "stopped": "settled",
         "seeds": 2, "delta": 0.05, "se": 0.005, "df": 3.5, "threshold": 0.003}
        for arm in ("qk_norm", "softpick")
    ]  # fmt: skip
    family = {"baseline": "baseline", "metric": "val_loss", "scale": "d48", "sigma": 0.02,
              "sigma_dof": 7, "baseline_seeds": 3, "arms": rows}  # fmt: skip
    folder = audit / store.SEQUENTIAL_DIR
    folder.mkdir()
    rule = {"alpha": 0.05, "max_seeds": 3, "baseline_seeds": 3}
    summary = {"rounds": 2, "runs": 14, "stop": "settled", "rule": rule, "families": [family]}
    (folder / store.SEQUENTIAL_SUMMARY).write_text(json.dumps(summary))
    data = gather(audit)
    answer = {(a.arm): a.verdict for v in data.verdicts for a in v.arms
              if (v.metric, v.scale) == ("val_loss", "d48")}  # fmt: skip
    looped = {p.arm: p for s in data.findings.decouplings if s.scale == "d48" for p in s.arms}
    for arm in ("qk_norm", "softpick"):
        assert answer[arm] == "improver" and looped[arm].loss_status == "moved"


def test_an_mde_beyond_the_metrics_range_cannot_be_detected() -> None:
    from archaudit.report.sections import UNDETECTABLE, mde_text

    assert mde_text("downstream_avg", 1.37).endswith(UNDETECTABLE)  # an accuracy spans 0..1
    assert mde_text("downstream_avg", 0.09) == "0.09"
    assert mde_text("val_loss", 1.37) == "1.37"  # a loss has no upper end


def test_a_figure_too_small_for_its_legend_grows_instead_of_warning() -> None:
    fig = MplFigure(figsize=(5.0, 0.9), layout="constrained")
    ax = fig.subplots()
    ax.set(title="title", xlabel="x")
    handles = [Line2D([], [], label=f"entry {i}") for i in range(4)]
    fig.legend(handles=handles, loc="outside lower center", ncols=1, fontsize=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = figures.render("tiny", fig, "a tiny figure")
    assert fig.get_figheight() > 0.9 and "<svg" in figure.svg
