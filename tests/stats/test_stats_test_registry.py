"""Issue 56: a statistical test is one registered entry (stats/tests/), and nothing
outside its file branches on its name."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from archaudit.names import Test as Name
from archaudit.stats.tests import BUILT_IN, STAT_TESTS, Spread, StatTest, statistical_test
from archaudit.stats.tests.base import register_test

SRC = Path(__file__).parents[2] / "src" / "archaudit"
BRANCH = re.compile(r"\btest\s*(==|!=)|\btest\s+(not\s+)?in\s*(\(\s*Test\.|CALIBRATED_TESTS)")
"""`x.test == Test.Z`, `design.test != ...`, `test in (Test.Z, ...)`, `test in CALIBRATED_TESTS`:
33 lines before the registry (issue 56). A replication claim's kind (`ClaimTest`) is asked by
its own properties (`Claim.is_level`), not by its spelling either."""


def test_no_module_branches_on_a_tests_name():
    branches = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if BRANCH.search(line)
    ]
    assert branches == []


def test_every_test_name_is_one_registered_entry_from_one_file():
    assert set(STAT_TESTS) == set(Name)
    files = {type(statistical_test(name)).__module__ for name in Name}
    assert files == {module.__name__ for module in BUILT_IN}  # one file each


def test_the_words_a_verdict_is_decided_by_are_pinned():
    """The JSON `decided_by.test` and the console's column: records written before the
    registry read the same."""
    titles = {name: statistical_test(name).title for name in Name}
    assert titles == {
        Name.WELCH: "moderated Welch t",
        Name.ROBUST: "Welch t (single seeds: t at the single-seed bound)",
        Name.POOLED_T: "pooled t",
        Name.Z: "z",
        Name.SEQUENTIAL: "the sequential loop's last Welch t at its O'Brien–Fleming boundary",
    }
    assert {name for name in Name if statistical_test(name).symbol == "z"} == {Name.Z}


def test_a_test_broadcasts_over_audits_as_over_one_arm():
    """The judge passes scalars and the null simulation arrays: the same arithmetic."""
    delta, n, var = np.array([0.5, -1.0, 2.0]), np.array([2, 3, 1]), np.array([0.8, 1.2, np.nan])
    for name in (Name.ROBUST, Name.POOLED_T, Name.Z):
        test = statistical_test(name)
        stat, df, p = test.statistics(delta, Spread(n, 3, 1.0, 6, var, 1.1))
        for i in range(3):
            one = test.statistics(delta[i], Spread(n[i], 3, 1.0, 6, var[i], 1.1))
            assert (stat[i], df[i], p[i]) == pytest.approx(tuple(map(float, one)), nan_ok=True)


def test_a_name_registered_twice_is_refused(monkeypatch):
    monkeypatch.setattr(STAT_TESTS, "_items", dict(STAT_TESTS._items))

    class Again(StatTest):
        name = Name.WELCH
        title = "another Welch"

    with pytest.raises(ValueError, match="statistical test 'welch' is already registered"):
        register_test(Again)
