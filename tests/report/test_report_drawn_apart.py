"""The report's figures drawn by forked workers (`build_report(workers=...)`, what `run` and
`demo` end with): a placeholder while the sections are laid out, then the same page, byte for
byte, as when every figure is drawn one by one here."""

from __future__ import annotations

from pathlib import Path

import pytest

from archaudit.audit.launcher.warm import warm_starts
from archaudit.report import Report, build_report, figures
from archaudit.report.data import Band
from archaudit.report.palette import arm_colours

BANDS = (
    Band("baseline", "d48", 2, (50, 100), (3.1, 3.0), (3.0, 2.9), (3.2, 3.1)),
    Band("x", "d48", 1, (50, 100), (3.0, 2.8), (3.0, 2.8), (3.0, 2.8)),
)


@pytest.mark.skipif(not warm_starts(), reason="figures are drawn apart only where a fork is safe")
def test_a_figure_drawn_apart_is_a_placeholder_until_the_worker_has_drawn_it() -> None:
    colours = arm_colours(["baseline", "x"], "baseline")
    here = figures.loss_bands("v", "validation loss", "loss", BANDS, colours)
    with figures.drawn_apart(2) as pool:
        assert pool is not None
        placeholder = figures.loss_bands("v", "validation loss", "loss", BANDS, colours)
        assert placeholder.svg == ""
        assert pool.drawn(placeholder) == here


def test_figures_drawn_by_two_workers_give_the_same_page(
    audit_dir: Path, audit_report: Report
) -> None:
    apart = build_report(audit_dir, command="archaudit report runs/fake", workers=2)
    assert apart.html() == audit_report.html()
    assert apart.sections == audit_report.sections
