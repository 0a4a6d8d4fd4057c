"""The typer application every command module registers on, and its global options."""

from __future__ import annotations

from typing import Any

import typer
import typer.core

from archaudit.cli.base.options import Plugins, load_plugin_modules

# typer < 0.2x has no `display_type_rich` (nor shows a type for flags): nothing to patch there.
_option_type = getattr(typer.core.TyperOption, "display_type_rich", None)


def _flag_type(self: typer.core.TyperOption, ctx: Any) -> str | None:
    """A flag takes no value, so --help shows no type for it (typer 0.2x writes `<bool>`).
    `ctx` is the click context of typer's private copy of click, hence `Any`."""
    return None if self.is_flag or _option_type is None else _option_type(self, ctx)


# The one patch of typer, for --help; mypy rightly flags a method replaced at run time.
if _option_type is not None:
    typer.core.TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign]

app = typer.Typer(
    name="archaudit",
    help="Audit Transformer modifications: train arms from one shared recipe, evaluate, judge.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # joins wrapped docstring lines into paragraphs
)


@app.callback()
def _root(plugin: Plugins = None) -> None:
    """Audit Transformer modifications: train arms from one shared recipe over seeds and
    scales, evaluate them downstream, and judge every claim against the seed noise floor."""
    load_plugin_modules(plugin)
