"""User-facing errors.

Every mistake a user can make (a bad key, a missing file, a malformed row) raises a subclass of
`ArchauditError` whose message names what was wrong, where, and what would be right. The CLI turns
these into one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ArchauditError(Exception):
    """An error the user can act on. The message is the whole story: no traceback is shown."""

    exit_code = 2


class ConfigError(ArchauditError):
    """A configuration value (TOML key, `--set` override, audit field) is wrong."""


class DataError(ArchauditError):
    """An input file (corpus, benchmark, CSV) is missing or malformed."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest choice, else the allowed values."""
    options = sorted(choices)
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    shown = ", ".join(options[:12]) + (", ..." if len(options) > 12 else "")
    return f" (allowed: {shown})"
