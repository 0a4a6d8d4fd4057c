"""Errors for bad statistical input: each names the file, the row, the column and the fix."""

from __future__ import annotations

from archaudit.errors import DataError, did_you_mean


class TableError(DataError):
    """A results or items table cannot be judged as it is.

    `where` is "file:line" (line is 1-based and counts the header) or just the file when the
    problem is not on one row.
    """

    def __init__(self, where: str, problem: str, fix: str) -> None:
        super().__init__(f"{where}: {problem}; {fix}")
        self.where = where


class MissingColumnError(TableError):
    """A required column is absent from the header."""


class UnknownColumnError(TableError):
    """The header has a column the format does not define (often a misspelling)."""


class BadValueError(TableError):
    """A cell cannot be parsed: text or NaN in `value`, a non-integer seed, an unknown status."""


class DuplicateRowError(TableError):
    """Two rows claim the same (arm, scale, seed, metric) or the same item."""


class InconsistentArmError(TableError):
    """An arm's `family` or `tuned` differs between its rows."""


class EmptyTableError(TableError):
    """The file is empty or has a header and no data rows."""


class UnknownNameError(TableError):
    """A baseline, anchor, metric, scale or task named by the caller is not in the table."""


class TooFewSeedsError(TableError):
    """The noise floor needs at least two finished seeds of the baseline (and of each anchor)."""


class ZeroNoiseError(TableError):
    """Every baseline seed has the same value, so the noise floor is zero and no test is defined."""


class DesignError(TableError):
    """The arms do not form the design an analysis needs (factorial, scaling ladder, scales)."""


def check_name(source: str, column: str, role: str, name: str, choices: tuple[str, ...]) -> str:
    """Return `name` if it is one of `choices`, else raise `UnknownNameError` with the closest."""
    if name not in choices:
        raise UnknownNameError(
            f"{source} (column {column!r})",
            f"{role} {name!r} is not in the table",
            "pass one that is" + did_you_mean(name, choices),
        )
    return name
