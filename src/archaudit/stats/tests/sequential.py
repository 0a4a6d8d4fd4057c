"""The sequential loop's test (`run --until-settled`): each arm's last robust t (plain Welch, the
single-seed bound for one seed) at its O'Brien–Fleming boundary, Holm across arms
(stats/simulation/sequential.py runs the loop; its statistic is the robust test's)."""

from __future__ import annotations

from archaudit.names import Test
from archaudit.stats.tests.base import TestFacts, register_test
from archaudit.stats.tests.robust import Robust


@register_test
class Sequential(Robust):
    name = Test.SEQUENTIAL
    title = "the sequential loop's last Welch t at its O'Brien–Fleming boundary"
    level_calibrated = False

    def describe(self, facts: TestFacts) -> str:
        return f"{self.name} test ({self.title})"

    def assumptions(self, facts: TestFacts) -> tuple[str, ...]:
        return ()  # the loop's own header says what it assumes
