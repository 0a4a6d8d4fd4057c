"""The family tests, one registered file each (`base.py` says what an entry holds).

`statistical_test(name)` looks one up; importing this package registers the built-in ones.
docs/guides/statistical-test.md adds one from your own module.
"""

from archaudit.stats.inference.tests import pooled, robust, sequential, welch, z
from archaudit.stats.inference.tests.base import (
    STAT_TESTS,
    PowerDesign,
    StatTest,
    TestFacts,
    register_test,
    statistical_test,
)

BUILT_IN = (welch, robust, pooled, z, sequential)
"""The built-in entries' modules (imported for their registrations)."""

__all__ = [
    "BUILT_IN",
    "STAT_TESTS",
    "PowerDesign",
    "StatTest",
    "TestFacts",
    "register_test",
    "statistical_test",
]
