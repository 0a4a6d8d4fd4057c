"""The `archaudit` command line: a thin face over library functions.

Each command group lives in its own module and registers itself on `app` (cli/base/app.py); this
file only wires them together and turns `ArchauditError` into one line on stderr with exit code
2. Options every command shares (`--json`, `-q`, `--plugin`, `--device`, `--preset`) live in
cli/base/options.py.
"""

from __future__ import annotations

import errno
import importlib
import sys

import typer

from archaudit.cli.base.app import app
from archaudit.errors import ArchauditError, os_error_line

__all__ = ["app", "main", "register_commands"]

CLICK_ERRORS = importlib.import_module(typer.BadParameter.__module__)
"""The exceptions of the click typer parses with (its own copy since typer 0.22)."""


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
        replicate_cmd,
        report_cmd,
        stats_cmd,
        stress_cmd,
        train_cmd,
    )


def main() -> None:
    register_commands()
    try:
        code = app(standalone_mode=False)
    except CLICK_ERRORS.ClickException as err:  # a flag's value, a missing argument: one line
        if type(err).__name__ != "NoArgsIsHelpError":  # else typer printed the help already
            typer.secho(f"error: {usage_line(err)}", err=True, fg="red")
        sys.exit(err.exit_code)
    except typer.Abort:
        typer.secho("Aborted!", err=True)
        sys.exit(1)
    except ArchauditError as err:
        typer.secho(f"error: {err}", err=True, fg="red")
        sys.exit(err.exit_code)
    except OSError as err:  # the machine's, not the input's: a full disk, a read-only folder
        if err.errno == errno.EPIPE:  # `archaudit ... | head`: the reader left
            sys.exit(1)
        typer.secho(f"error: {os_error_line(err)}", err=True, fg="red")
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


def usage_line(err: Exception, argv: list[str] | None = None) -> str:
    """A usage error as one line that names the command, the value given and the help, instead
    of click's usage box: `archaudit run: invalid value 'nan' for '--workers': Input should be
    a valid integer ... (see archaudit run --help)`."""
    message = " ".join(err.format_message().split()).rstrip(".")  # type: ignore[attr-defined]
    param = getattr(err, "param", None)
    value = _given(list(getattr(param, "opts", ())), sys.argv[1:] if argv is None else argv)
    if value is not None and message.startswith("Invalid value for "):
        message = f"invalid value {value!r} for {message.removeprefix('Invalid value for ')}"
    ctx = getattr(err, "ctx", None)
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:
        names.insert(0, ctx.info_name)
        ctx = ctx.parent
    path = " ".join(["archaudit", *names])
    return f"{path}: {message[:1].lower()}{message[1:]} (see {path} --help)"


def _given(flags: list[str], argv: list[str]) -> str | None:
    """The value given to one of `flags` on the command line (its last use), if any."""
    value = None
    for i, arg in enumerate(argv):
        name, equals, rest = arg.partition("=")
        if name in flags:
            value = rest if equals else (argv[i + 1] if i + 1 < len(argv) else None)
    return value
