"""Options every command shares, so each means the same thing and has the same default
everywhere, and the one way a command prints its JSON document."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

Json = Annotated[
    bool,
    typer.Option(
        "--json", help="Print one JSON document on stdout; human text goes to stderr or nowhere."
    ),
]
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="No live table, progress bars or log lines.")
]
Plugins = Annotated[
    list[str] | None,
    typer.Option(
        "--plugin",
        metavar="MODULE",
        help="Import MODULE first so that its @modification entries exist (repeatable); "
        "modules in the `archaudit.modifications` entry-point group load by themselves.",
    ),
]
DEFAULT_PRESET = "tiny"
Preset = Annotated[
    str,
    typer.Option(
        "--preset", help="Named model size: tiny, small, base, medium, large.", show_default=True
    ),
]
DEFAULT_DEVICE = ""
Device = Annotated[
    str,
    typer.Option(
        "--device",
        help="torch device, e.g. cpu or cuda:0 [default: the recipe's, which picks CUDA when "
        "there is one]",
        show_default=False,
    ),
]


def torch_device(device: str) -> str:
    """The torch device a command evaluates on: "" and "auto" mean CUDA when there is one, as
    `recipe.device = "auto"` does for training."""
    from archaudit.train.trainer import resolve_device

    return str(resolve_device(device or "auto"))


def load_plugin_modules(modules: list[str] | None) -> None:
    if modules:
        from archaudit.mods import load_plugins

        load_plugins(modules)


def quiet_output(quiet: bool, json_: bool) -> None:
    """Silence progress and log lines for -q, and for --json (stdout carries only the JSON)."""
    from archaudit.progress import set_quiet

    set_quiet(quiet or json_)


def emit(document: Any) -> None:
    """Print one JSON document on stdout: dataclasses and numpy values become plain JSON,
    NaN becomes null, paths become strings."""
    from archaudit.stats.serialize import to_jsonable

    typer.echo(
        json.dumps(
            to_jsonable(document), indent=2, allow_nan=False, default=str, ensure_ascii=False
        )
    )
