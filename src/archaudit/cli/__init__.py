"""The `archaudit` command line: a thin face over library functions.

Each command group lives in its own module and registers itself on `app` (cli/app.py); this
file only wires them together and turns `ArchauditError` into one line on stderr with exit code
2. Options every command shares (`--json`, `-q`, `--plugin`, `--device`, `--preset`) live in
cli/options.py.
"""

from __future__ import annotations

import sys

import typer

from archaudit.cli.app import app
from archaudit.errors import ArchauditError, os_error_line

__all__ = ["app", "main", "register_commands"]


def register_commands() -> None:
    # Imported for their side effect of adding commands to `app`.
    from archaudit.cli import (  # noqa: F401
        audit_cmd,
        data_cmd,
        diagnose_cmd,
        eval_cmd,
        export_cmd,
        import_cmd,
        mods_cmd,
        report_cmd,
        stats_aggregate_cmd,
        stats_cmd,
        stats_predict_cmd,
        stats_snr_cmd,
        stress_cmd,
        train_cmd,
    )


def main() -> None:
    register_commands()
    try:
        app()
    except ArchauditError as err:
        typer.secho(f"error: {err}", err=True, fg="red")
        sys.exit(err.exit_code)
    except OSError as err:  # the machine's, not the input's: a full disk, a read-only folder
        typer.secho(f"error: {os_error_line(err)}", err=True, fg="red")
        sys.exit(2)
