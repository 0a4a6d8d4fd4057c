"""The `archaudit` command line: a thin face over library functions.

Each command group lives in its own module and registers itself on `app`; this file only wires
them together and turns `ArchauditError` into one line on stderr with exit code 2.
"""

from __future__ import annotations

import sys

import typer

from archaudit.errors import ArchauditError

app = typer.Typer(
    name="archaudit",
    help="Audit Transformer modifications: train arms from one shared recipe, evaluate, judge.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # joins wrapped docstring lines into paragraphs
)


@app.callback()
def _root(
    plugin: list[str] = typer.Option(
        [],
        "--plugin",
        metavar="MODULE",
        help="Import MODULE first so that its @modification entries exist (repeatable); "
        "modules in the `archaudit.modifications` entry-point group load by themselves.",
    ),
) -> None:
    """Audit Transformer modifications: train arms from one shared recipe over seeds and
    scales, evaluate them downstream, and judge every claim against the seed noise floor."""
    if plugin:
        from archaudit.mods import load_plugins

        load_plugins(plugin)


def _register_commands() -> None:
    # Imported for their side effect of adding commands to `app`.
    import archaudit.cli.stats_aggregate_cmd  # noqa: F401  (imports stats_cmd too)
    from archaudit.cli import (  # noqa: F401
        audit_cmd,
        data_cmd,
        diagnose_cmd,
        eval_cmd,
        mods_cmd,
        report_cmd,
        stats_cmd,
        train_cmd,
    )


def main() -> None:
    _register_commands()
    try:
        app()
    except ArchauditError as err:
        typer.secho(f"error: {err}", err=True, fg="red")
        sys.exit(err.exit_code)
