"""Options every command shares, so each means the same thing and has the same default
everywhere, and the one way a command prints its JSON document.

The judging flags are generated from `JudgeOptions` (`judge_flags`): each flag's name, type,
default and help come from the dataclass field, and the command receives the built options.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import typing
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from archaudit.stats.options import DEFAULT, JudgeOptions

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


_collecting: list[list[Any]] = []


@contextlib.contextmanager
def collected_documents() -> Iterator[list[Any]]:
    """While open, `emit` gathers its documents here instead of printing them: a command that
    runs once per metric or scale then prints them as one JSON list."""
    _collecting.append([])
    try:
        yield _collecting[-1]
    finally:
        _collecting.pop()


def emit(document: Any) -> None:
    """Print one JSON document on stdout: dataclasses and numpy values become plain JSON,
    NaN becomes null, paths become strings."""
    from archaudit.stats.serialize import to_jsonable

    if _collecting:
        _collecting[-1].append(document)
        return
    typer.echo(
        json.dumps(
            to_jsonable(document), indent=2, allow_nan=False, default=str, ensure_ascii=False
        )
    )


Command = Callable[..., Any]
KEYWORD = inspect.Parameter.KEYWORD_ONLY
"""Typer passes every parameter by name, so a command's order is free."""
REPEATABLE = {"anchors", "exclude", "arms"}
"""Tuple fields: a repeatable flag (commas also split, for --arms)."""


def judge_flags(*names: str) -> Callable[[Command], Command]:
    """Give a command the `JudgeOptions` fields `names` as flags, generated from the dataclass
    (flag name and help from the field's metadata, its type and default), placed before
    --json/--quiet; the command is called with `options`, the `JudgeOptions` they build."""
    fields = {f.name: f for f in dataclasses.fields(JudgeOptions)}
    hints = typing.get_type_hints(JudgeOptions)

    def decorate(command: Command) -> Command:
        own = [
            p.replace(kind=KEYWORD, annotation=_resolved(p.annotation, command))
            for p in inspect.signature(command).parameters.values()
            if p.name != "options"
        ]
        flags = [_parameter(fields[name], hints[name]) for name in names]
        cut = next((i for i, p in enumerate(own) if p.name in ("json_", "quiet")), len(own))

        @functools.wraps(command)
        def run(**values: Any) -> Any:
            chosen = {name: _value(name, values.pop(name)) for name in names}
            return command(options=JudgeOptions(**chosen), **values)

        parameters = [*own[:cut], *flags, *own[cut:]]
        run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in parameters}
        return run

    return decorate


def _resolved(annotation: Any, command: Command) -> Any:
    """A string annotation (postponed evaluation) as the object typer reads."""
    return eval(annotation, command.__globals__) if isinstance(annotation, str) else annotation


def judge_flag(name: str) -> Any:
    """One `JudgeOptions` field as a typer option type, for a command that uses the flag
    without building the options (its default: `DEFAULT.<name>`)."""
    field = next(f for f in dataclasses.fields(JudgeOptions) if f.name == name)
    return _parameter(field, typing.get_type_hints(JudgeOptions)[name]).annotation


def _parameter(field: dataclasses.Field, hint: Any) -> inspect.Parameter:
    repeatable = field.name in REPEATABLE
    kind = list[str] | None if repeatable else hint
    help = field.metadata["help"]
    return inspect.Parameter(
        field.name,
        KEYWORD,
        default=None if repeatable else field.default,
        annotation=Annotated[
            kind, typer.Option(field.metadata["flag"], help=help, show_default=not repeatable)
        ],
    )


def _value(name: str, value: Any) -> Any:
    """A flag's value as the field holds it: repeatable flags as tuples (--arms also split at
    commas; unset means every arm)."""
    if name not in REPEATABLE:
        return value
    names = tuple(part for item in value or () for part in item.split(",") if part)
    return names or (None if name == "arms" else ())


if TYPE_CHECKING:  # what the generated flags hold
    Baseline = str
    LowerIsBetter = bool | None
else:
    Baseline = judge_flag("baseline")
    LowerIsBetter = judge_flag("lower_is_better")
DEFAULT_BASELINE = DEFAULT.baseline
