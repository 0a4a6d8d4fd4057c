"""Evidence grades A–D from the five criteria of PROTOCOL.md."""

import itertools

import pytest

from archaudit.stats import grade
from archaudit.stats.judging.grading import (
    CANDIDATE_CAVEAT,
    CRITERIA,
    R7_CAVEAT,
    SCALES,
    TIED_CAVEAT,
    Grade,
    caveats,
)


@pytest.mark.parametrize(
    ("seeds", "downstream", "scales", "tuned", "corrected"),
    list(itertools.product((1, 3), (False, True), (1, 2), (False, True), (False, True))),
)
def test_grade_counts_missing_criteria(seeds, downstream, scales, tuned, corrected):
    result = grade(
        seeds=seeds, downstream=downstream, scales=scales, tuned=tuned, corrected=corrected
    )
    missing = [seeds < 3, not downstream, scales < 2, tuned, not corrected]
    assert len(result.missing) == sum(missing)
    assert set(result.missing) == {c for c, gap in zip(CRITERIA, missing, strict=True) if gap}
    assert result.grade == "ABCD"[min(sum(missing), 3)]
    if tuned:
        assert result.grade != "A"


def test_caveats_name_what_limits_a_verdict():
    """Issue 46: the words every renderer prints beside a verdict (report, console, JSON)."""
    a = Grade("A", ())
    assert caveats(a, (), "improver") == ()  # nothing limits it
    b = Grade("B", (SCALES,))
    assert caveats(b, (R7_CAVEAT,), "improver") == (f"grade {b.text}", R7_CAVEAT)
    assert b.text == f"B (missing: {SCALES})"
    assert caveats(a, (), "candidate-improver") == (CANDIDATE_CAVEAT,)
    # post_ln's downstream_avg in the demo: every seed scored the baseline's seed's score
    tied = TIED_CAVEAT.format(metric="downstream_avg")
    assert caveats(a, (), "within-noise", tied="downstream_avg") == (tied,)
    assert "downstream_avg" in tied
