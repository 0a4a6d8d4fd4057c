"""The least width of any interval that holds the slope rule's constraints
(benchmarks/predict_rule_optimum.py), and the doc's table made from its record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archaudit.stats.predictions import slope_rule

ROOT = Path(__file__).parents[2]
COARSE = {"t_step": 0.4, "u_step": 0.2}
"""A grid coarse enough for the suite; the record's is twice as fine each way."""


@pytest.fixture
def optimum(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import predict_rule_optimum

    return predict_rule_optimum


def test_without_drift_the_seed_noise_interval_is_the_narrowest(optimum):
    """κ = 0 and ρ = 0: the target is A's own truth and t says nothing of A's error, so no
    procedure beats A ± z·σ_A (the unit of the widths)."""
    lines = next(c for c in optimum.constraint_sets(4, 4) if c.name == "lines only")
    still = slope_rule.RuleDesign(0.0, 0.0)
    assert optimum.least_width(still, lines, **COARSE) == pytest.approx(1.0, abs=0.01)


def test_the_rule_is_no_narrower_than_the_least_width_of_what_it_holds(optimum):
    """The rule holds every line (λ = 1) at 80%: its quiet width is at least the programme's
    for lines only, and within 10% of it (its own constraints add the fades and the cap). A
    rule narrower than the optimum would have a coverage computed wrong."""
    d = optimum.design(5, 4)
    lines = next(c for c in optimum.constraint_sets(5, 4) if c.name == "lines only")
    least = optimum.least_width(d, lines, **COARSE)
    assert least <= optimum.rule_width(d) <= 1.1 * least


def test_the_doc_shows_the_table_of_the_stored_record(optimum):
    record = json.loads(optimum.RECORD.read_text())
    shapes = json.loads(optimum.SHAPES.read_text())
    assert optimum.table(record, shapes) in optimum.DOC.read_text(), (
        "regenerate: PYTHONPATH=src:benchmarks python benchmarks/predict_rule_optimum.py"
    )
