"""One sign convention (issue 57): every table column and figure axis of the report that holds a
signed comparison with the baseline (a Δ, a change, an effect or interaction) says in words which
way is better. The loss-vs-downstream figure and table printed "val_loss change" (negative =
better) beside "Δ downstream_avg" with no word for either."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from archaudit.report import Report
from archaudit.report.figures import Figure
from archaudit.report.sections import Grid, Row

SIGNED = re.compile(r"Δ(?![^|]*\|)|\bchange\b|\beffect\b|\binteraction\b|\br_L\b")
"""A signed comparison with the baseline; |Δ| (a size, no sign) is not one."""
DIRECTION = re.compile(
    r"\b(positive|negative|higher|lower)\s*(=|is)\s*(better|worse|more robust|more fragile)\b"
)


def labels(report: Report) -> Iterator[tuple[str, str]]:
    """(where, label) for every table column and figure axis of the report."""
    for section in report.sections:
        for block in section.blocks:
            figures = block.figures if isinstance(block, Row) else (block,)
            for figure in figures:
                if isinstance(figure, Figure):
                    yield from ((f"figure {figure.key}", t) for t in figure.labels)
            if isinstance(block, Grid):
                yield from ((f"table in {section.key}", c) for c in block.columns)


def unsigned_labels(report: Report) -> list[tuple[str, str]]:
    return [(w, t) for w, t in labels(report) if SIGNED.search(t) and not DIRECTION.search(t)]


def test_the_detectors_tell_a_stated_direction_from_none() -> None:
    assert SIGNED.search("val_loss change vs baseline (%)") and SIGNED.search("Δ at d48")
    assert not SIGNED.search("max |Δ|/σ")
    assert DIRECTION.search("Δ val_loss (positive = better)")
    assert DIRECTION.search("val_loss change vs baseline (%, negative = better)")
    assert not DIRECTION.search("val_loss change vs baseline (%)")


@pytest.mark.parametrize("fixture", ["csv_report", "audit_report"])
def test_every_signed_column_and_axis_says_which_way_is_better(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    report: Report = request.getfixturevalue(fixture)
    found = list(labels(report))
    # the tables and the figures are both read: the decoupling figure's axes and its table
    assert any(w.startswith("figure decoupling") for w, _ in found) or fixture == "audit_report"
    assert any(w == "table in arms" for w, _ in found)
    assert unsigned_labels(report) == []
