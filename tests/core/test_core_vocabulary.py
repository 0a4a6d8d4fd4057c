"""Issue 56: every verdict, loop state and stability outcome is an enum member, and no code
compares one by its spelling (`python -m archaudit.devtools.vocabulary` prints the same)."""

from __future__ import annotations

import ast

import pytest

from archaudit.devtools.vocabulary import SPELLINGS, findings, problems
from archaudit.stats.analyses.stability import StabilityOutcome, StabilityVerdict
from archaudit.stats.records.verdicts import Verdict
from archaudit.stats.simulation.sequential import LoopState


def test_no_verdict_is_compared_by_its_spelling():
    assert problems() == []


@pytest.mark.parametrize(
    "line",
    [
        'if state == "open" and budget: pass',  # audit/execute/sequential.py before issue 56
        'kept = [v for v in arms if v.paper_verdict in ("improver", "regressor")]',
        'flagged = verdict != "more-fragile"',
        "Verdict(verdict.get(sample.arm, sample.status))",  # stats/judging/judgement.py before
    ],
)
def test_the_check_finds_a_comparison_by_spelling(line):
    assert list(findings(ast.parse(line)))


@pytest.mark.parametrize(
    "line",
    [
        "if state is LoopState.OPEN and budget: pass",
        "kept = [v for v in arms if v.paper_verdict in SIGNIFICANT]",
        'diverged = any(e["event"] == "diverged" for e in events)',  # an event, not a verdict
        "Verdict(verdict)",
    ],
)
def test_the_check_lets_members_and_other_vocabularies_pass(line):
    assert not list(findings(ast.parse(line)))


def test_the_spellings_come_from_the_enums():
    assert {"within-noise", "improver", "open", "futile", "more-robust", "not estimable"} <= (
        SPELLINGS
    )


def test_a_settled_loop_state_has_its_verdict_and_an_open_one_none():
    assert LoopState.IMPROVER.verdict is Verdict.IMPROVER
    assert LoopState.REGRESSOR.verdict is Verdict.REGRESSOR
    assert LoopState.OPEN.verdict is None and LoopState.FUTILE.verdict is None
    assert [s.label for s in LoopState] == ["open", "improver", "regressor", "futile"]


def test_a_stability_record_read_back_holds_the_member():
    fields = {f: None for f in StabilityVerdict.__dataclass_fields__}
    record = StabilityVerdict(**{**fields, "verdict": "more-robust"})
    assert record.verdict is StabilityOutcome.MORE_ROBUST and record.verdict.sign == 1
    with pytest.raises(ValueError, match="more-brittle"):
        StabilityVerdict(**{**fields, "verdict": "more-brittle"})
