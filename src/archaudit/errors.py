"""User-facing errors.

Every mistake a user can make (a bad key, a missing file, a malformed row) raises a subclass of
`ArchauditError` whose message names what was wrong, where, and what would be right. The CLI turns
these into one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path


class ArchauditError(Exception):
    """An error the user can act on. The message is the whole story: no traceback is shown."""

    exit_code = 2


class ConfigError(ArchauditError):
    """A configuration value (TOML key, `--set` override, audit field) is wrong."""


class DataError(ArchauditError):
    """An input file (corpus, benchmark, CSV) is missing or malformed."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest choice, else the allowed values."""
    options = sorted(str(choice) for choice in choices)  # a StrEnum member as its text
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    shown = ", ".join(options[:12]) + (", ..." if len(options) > 12 else "")
    return f" (allowed: {shown})"


def did_you_mean_path(path: str | Path) -> str:
    """' (did you mean 'runs/small_audit'?)' for a missing `path` whose folder holds an entry
    of a close name (`my_audt.toml` → `my_audit.toml`), else ''. Every command that takes an
    audit file, an audit folder or a table says it the same way."""
    path = Path(path)
    folder = path.parent
    try:
        names = sorted(entry.name for entry in folder.iterdir())
    except OSError:  # the folder is missing too, or unreadable
        return ""
    close = difflib.get_close_matches(path.name, names, n=1, cutoff=0.6)
    return f" (did you mean {str(folder / close[0])!r}?)" if close else ""


def os_error_line(err: OSError) -> str:
    """One line for a failed file operation: the file, what the system said, and the usual fix
    (a full disk, a read-only folder), e.g. `cannot write runs/x/results.csv: No space left on
    device (errno 28): free some space, then rerun: finished runs are kept`."""
    where = " → ".join(str(f) for f in (err.filename, err.filename2) if f is not None)
    reason = f"{err.strerror or err} (errno {err.errno})" if err.errno else str(err)
    fixes = {28: "free some space, then rerun: finished runs are kept", 30: "the folder is "
             "read-only: give a writable one", 13: "check the folder's permissions"}  # fmt: skip
    fix = fixes.get(err.errno or 0, "")
    return f"cannot use {where or 'a file'}: {reason}" + (f"; {fix}" if fix else "")
