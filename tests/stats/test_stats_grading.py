"""Evidence grades A–D from the five criteria of PROTOCOL.md."""

import itertools

import pytest

from archaudit.stats import grade
from archaudit.stats.grading import CRITERIA


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
