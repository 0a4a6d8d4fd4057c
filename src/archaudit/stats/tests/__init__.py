"""The family tests, one registered file each (`base.py` says what an entry holds).

`statistical_test(name)` looks one up. Importing this package imports every module beside
`base.py`, so a new built-in test is one new file here and nothing else;
docs/guides/statistical-test.md adds one from your own module.
"""

import importlib
import pkgutil

from archaudit.stats.tests.base import (
    STAT_TESTS,
    PowerDesign,
    Spread,
    StatTest,
    TestFacts,
    register_test,
    statistical_test,
)

BUILT_IN = tuple(
    importlib.import_module(f"{__name__}.{module.name}")
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if module.name != "base"
)
"""The built-in entries' modules, in name order (imported for their registrations)."""

__all__ = [
    "BUILT_IN",
    "STAT_TESTS",
    "PowerDesign",
    "Spread",
    "StatTest",
    "TestFacts",
    "register_test",
    "statistical_test",
]
