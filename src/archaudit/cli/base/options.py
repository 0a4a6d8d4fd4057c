"""Options every command shares, so each means the same thing and has the same default
everywhere, and the one way a command prints its JSON document.

The judging flags are generated from `JudgeOptions` (`judge_flags`): each flag's name, type,
default and help come from the dataclass field, and the command receives the built options.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import inspect
import itertools
import json
import math
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from archaudit.errors import ConfigError
from archaudit.ranges import REPLICATES, SEED, Range
from archaudit.stats.choices.options import DEFAULT, JudgeOptions

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
    str | None,
    typer.Option(
        "--preset",
        help=f"Named model size: tiny, small, base, medium, large \\[default: {DEFAULT_PRESET}; "
        "not with --config].",
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


def in_range(
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
    *,
    names: bool = False,
) -> Callable[[Any], Any]:
    """The check of a numeric option, as its typer `callback`: every value (each of a
    repeatable option's) finite and in the range, else exit 2 with one line naming the option
    and the range (`--target-tokens 0`, `nan`, `inf`). With `names`, a text that is not a
    number passes (an option that takes a number or a name: `--target 1.2e9` or a preset).
    Every numeric option of every command has one (a test checks), the flags generated from
    a dataclass (`Flags`) a finite one, their ranges checked by the dataclass."""
    allowed = Range(low, high, low_open, high_open)

    def check(value: Any) -> Any:
        for one in _values(value):
            number = _number(one, names)
            if number is not None and not allowed.holds(number):
                raise typer.BadParameter(f"{one} is not {allowed}")
        return value

    check.range = allowed  # type: ignore[attr-defined]
    return check


def _values(value: Any) -> list[Any]:
    """An option's values: a repeatable one's each, a text's parts between commas."""
    values = value if isinstance(value, list | tuple) else [value]
    return [p for v in values for p in (v.split(",") if isinstance(v, str) else [v])]


def _number(value: Any, names: bool) -> float | None:
    """`value` as a number; None for no value, or for a name where `names` allows one."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not str(value).strip():
        return None  # "1,,2": an empty part, skipped as the option itself skips it
    try:
        return float(str(value))
    except ValueError:
        if names:
            return None
        raise typer.BadParameter(f"{value!r} is not a number") from None


MAX_BOOT = int(REPLICATES.high)
"""Bootstrap replicates, at most (`ranges.REPLICATES`)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Bootstrap:
    """A bootstrap's size and seed (`--n-boot`, `--seed`)."""

    n_boot: int = dataclasses.field(default=2000, metadata={"range": REPLICATES})
    """Bootstrap replicates."""
    seed: int = dataclasses.field(default=0, metadata={"range": SEED})
    """Seed of the bootstrap's draws (any integer >= 0)."""

    def __post_init__(self) -> None:
        if not 1 <= self.n_boot <= MAX_BOOT:
            raise ConfigError(f"--n-boot {self.n_boot} must be in [1, {MAX_BOOT:,}]")
        if self.seed < 0:
            raise ConfigError(f"--seed {self.seed} must be >= 0 (numpy seeds are)")


def torch_device(device: str) -> str:
    """The torch device a command evaluates on: "" and "auto" mean CUDA when there is one, as
    `recipe.device = "auto"` does for training."""
    from archaudit.train.loop.trainer import resolve_device

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
    from archaudit.stats.records.serialize import to_jsonable

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


@dataclasses.dataclass(frozen=True)
class Flags:
    """Marks a command parameter, `name: Annotated[T, Flags(Source)]`, that `with_flags` turns
    into one flag per field of the dataclass `Source`. Each flag's name, help, type and
    default come from its field: the name from `metadata["flag"]` (else `--<prefix><name>`,
    underscores as dashes), the help from `metadata["help"]` or the field's docstring.

    The command receives `Source(**values)`; with `section` set, it receives instead the
    flags given as `--set` texts (`section.field=value`, TOML values) for the command to apply
    to its file, so that a flag and its `--set` are one thing, checked by the same class."""

    source: type
    names: tuple[str, ...] = ()
    """The fields given as flags (default: every field)."""
    prefix: str = ""
    section: str | None = None
    """Receive `--set` texts under this section ("" = top-level keys) for the flags given."""
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """This command's default for a field, where it differs from the field's."""
    aliases: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """More flag names for a field (`--corpus` for `--recipe.corpus`)."""
    unset: str = ""
    """What an unset flag means, for the help of `section` flags ("the audit file's")."""
    panel: str | None = None
    """The --help panel the flags are listed under."""
    without: tuple[str, ...] = ()
    """Fields this command declares itself in another shape (`stats transfer`'s repeatable
    `--baseline`) or whose flag name it gives another meaning (`--target`)."""

    def fields(self) -> list[dataclasses.Field]:
        """The fields given as flags: `names`, else every field that is a flag (the rule: a
        field is a flag on every command that takes its class unless its metadata says
        `flag=False`), less `without`."""
        every = {f.name: f for f in dataclasses.fields(self.source)}
        if self.names:
            return [every[name] for name in self.names]
        unknown = sorted(set(self.without) - set(every))
        assert not unknown, f"Flags.without names no field of {self.source.__name__}: {unknown}"
        return [
            f
            for f in every.values()
            if f.metadata.get("flag", True) is not False and f.name not in self.without
        ]


def with_flags(command: Command) -> Command:
    """Expand every `Annotated[T, Flags(...)]` parameter of `command` into its generated flags
    (in its place), and call `command` with what they build. Put it under `@app.command()`."""
    groups: dict[str, Flags] = {}
    parameters = []
    for p in inspect.signature(command).parameters.values():
        annotation = _resolved(p.annotation, command)
        marker = next(
            (m for m in getattr(annotation, "__metadata__", ()) if isinstance(m, Flags)), None
        )
        if marker is None:
            parameters.append(p.replace(kind=KEYWORD, annotation=annotation))
            continue
        groups[p.name] = marker
        hints = typing.get_type_hints(marker.source)
        parameters += [
            _parameter(marker, f, hints[f.name], f"{p.name}__{f.name}") for f in marker.fields()
        ]

    @functools.wraps(command)
    def run(**values: Any) -> Any:
        for name, marker in groups.items():
            given = {f.name: values.pop(f"{name}__{f.name}") for f in marker.fields()}
            values[name] = _built(marker, given)
        return command(**values)

    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run


def _resolved(annotation: Any, command: Command) -> Any:
    """A string annotation (postponed evaluation) as the object typer reads, evaluated where
    the command was written."""
    where = inspect.unwrap(command).__globals__
    return eval(annotation, where) if isinstance(annotation, str) else annotation


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (and its dataclass bases), by name."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            docs.update(_class_field_docs(inspect.getsourcefile(klass) or "", klass.__qualname__))
    return docs


def _class_field_docs(source_file: str, qualname: str) -> dict[str, str]:
    """The field docstrings of the class `qualname` (nested: dotted) in `source_file`."""
    body = _module_syntax(source_file).body
    for part in qualname.split("."):
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == part).body
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        text = (
            after.value.value
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            else None
        )
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(text, str)
        ):
            docs[node.target.id] = " ".join(inspect.cleandoc(text).split())
    return docs


@functools.cache
def _module_syntax(source_file: str) -> ast.Module:
    """A source file's syntax tree, parsed once for all its classes (`inspect.getsource` of a
    class parses the whole module per class: 0.4 s of every command's start-up)."""
    return ast.parse(Path(source_file).read_text(encoding="utf-8"))


def flag_names(marker: Flags, field: dataclasses.Field) -> tuple[str, ...]:
    """The field's flag and its aliases (`--x/--no-x` for an optional bool given as `--set`)."""
    name = field.metadata.get("flag") or f"--{marker.prefix}{field.name.replace('_', '-')}"
    return (name, *marker.aliases.get(field.name, ()))


def _repeatable(hint: Any) -> bool:
    return tuple in (typing.get_origin(hint), *map(typing.get_origin, typing.get_args(hint)))


def _element(hint: Any) -> type:
    """The element type of a `tuple[X, ...]` hint (or of `tuple[X, ...] | None`)."""
    return next(
        typing.get_args(h)[0]
        for h in (hint, *typing.get_args(hint))
        if typing.get_origin(h) is tuple
    )


def _element_or_none(hint: Any) -> Any:
    return _element(hint) if _repeatable(hint) else None


METAVARS = {str: "NAME", float: "NUMBER", int: "N"}


def _parameter(marker: Flags, field: dataclasses.Field, hint: Any, name: str) -> inspect.Parameter:
    default = marker.defaults.get(field.name, field.default)
    help = field.metadata.get("help") or _escaped(field_docs(marker.source).get(field.name, ""))
    if default is dataclasses.MISSING:  # a required field: a required flag
        default = ...
    kind: Any = hint  # a type built at run time: typer reads it, mypy cannot
    shown = default is not None and default is not ...
    metavar = None
    if _repeatable(hint):
        kind, default, shown = list[str] | None, None, False
        metavar = f"{METAVARS.get(_element(hint), 'VALUE')},..."
    elif marker.section is not None:
        kind, default, shown = hint | None, None, False
        if field.default is dataclasses.MISSING or field.default in ("", None):
            help += f" \\[default: {marker.unset}]"
        else:
            help += f" \\[default: {marker.unset}, else {field.default}]"
    metavar = field.metadata.get("metavar", metavar)
    names = flag_names(marker, field)
    if kind in (bool | None,) and marker.section is not None and "/" not in names[0]:
        names = (f"{names[0]}/--{marker.prefix}no-{field.name.replace('_', '-')}", *names[1:])
    numeric = {float, int} & {hint, *typing.get_args(hint), *map(_element_or_none, [hint])}
    allowed: Range = field.metadata.get("range") or Range()
    flag = Annotated[
        kind,
        typer.Option(
            *names,
            help=help,
            show_default=shown,
            metavar=metavar,
            rich_help_panel=marker.panel,
            callback=in_range(*allowed.bounds(), names=field.metadata.get("names", False))
            if numeric or "range" in field.metadata
            else None,
        ),
    ]
    return inspect.Parameter(name, KEYWORD, default=default, annotation=flag)


def _escaped(text: str) -> str:
    """A docstring as markdown help: rich would read `[x]` as a style and `<x>` as a tag."""
    return text.replace("[", "\\[").replace("<", "\\<")


def _built(marker: Flags, given: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(marker.source)
    values = {
        f.name: _value(given[f.name], hints[f.name], flag_names(marker, f)[0])
        for f in marker.fields()
    }
    if marker.section is None:
        return marker.source(**values)
    prefix = f"{marker.section}." if marker.section else ""
    return [f"{prefix}{name}={_toml(value)}" for name, value in values.items() if value is not None]


def _value(value: Any, hint: Any, flag: str) -> Any:
    """A flag's value as the field holds it: a repeatable flag's values (also split at commas)
    as a tuple of the field's element type; unset means the field's default (None for --arms)."""
    if not _repeatable(hint):
        return value
    parts = [part.strip() for item in value or () for part in item.split(",") if part.strip()]
    if not parts:
        return None if type(None) in typing.get_args(hint) else ()
    element = _element(hint)
    try:
        return tuple(element(part) for part in parts)
    except ValueError:
        raise ConfigError(
            f"{flag} {','.join(parts)!r}: give {element.__name__} values separated by commas"
        ) from None


def _toml(value: Any) -> str:
    """A flag's value as the TOML value of its `--set` text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | Path):
        return json.dumps(str(value))  # a TOML basic string
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def judge_flags(*names: str, without: tuple[str, ...] = ()) -> Callable[[Command], Command]:
    """Give a command the `JudgeOptions` fields as flags, placed before --json/--quiet; the
    command is called with `options`, the `JudgeOptions` they build.

    The rule: a command that judges a family takes every field that is a flag (each field's
    metadata says whether it is one), so a field added to `JudgeOptions` is a flag on every such
    command at once; `without` leaves out a field the command gives its own shape. A command
    that only borrows a few of the options without judging a family (`stats snr`, `stats
    aggregate`, `stats predict`) names them in `names`."""

    def decorate(command: Command) -> Command:
        own = [
            p.replace(kind=KEYWORD)
            for p in inspect.signature(command).parameters.values()
            if p.name != "options"
        ]
        marker = Flags(JudgeOptions, names, without=without)
        options = inspect.Parameter("options", KEYWORD, annotation=Annotated[JudgeOptions, marker])
        cut = next((i for i, p in enumerate(own) if p.name in OUTPUT), len(own))
        placed = functools.wraps(command)(lambda **values: command(**values))
        placed.__signature__ = inspect.Signature([*own[:cut], options, *own[cut:]])  # type: ignore[attr-defined]
        return with_flags(placed)

    return decorate


OUTPUT = ("json_", "quiet")
"""The parameters `output_flags` gives every command that prints: --json and --quiet (-q)."""


def output_flags(command: Command) -> Command:
    """Give `command` the two output flags, declared here once: `--json` (one JSON document on
    stdout) and `--quiet`/`-q`, and silence progress and log lines for either before it runs.

    The command declares `json_: bool = False` or `quiet: bool = False` only where its body
    reads them; they are passed to it then."""
    signature = inspect.signature(command)
    reads = [name for name in OUTPUT if name in signature.parameters]
    own = [
        p.replace(kind=KEYWORD, annotation=_resolved(p.annotation, command))
        for p in signature.parameters.values()
        if p.name not in OUTPUT
    ]
    flags = [
        inspect.Parameter("json_", KEYWORD, default=False, annotation=Json),
        inspect.Parameter("quiet", KEYWORD, default=False, annotation=Quiet),
    ]

    @functools.wraps(command)
    def run(**values: Any) -> Any:
        given = {name: values.pop(name) for name in OUTPUT}
        quiet_output(given["quiet"], given["json_"])
        return command(**values, **{name: given[name] for name in reads})

    parameters = [*own, *flags]
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run


def judge_flag(name: str) -> Any:
    """One `JudgeOptions` field as a typer option type, for a command that uses the flag
    without building the options (its default: `DEFAULT.<name>`)."""
    field = next(f for f in dataclasses.fields(JudgeOptions) if f.name == name)
    hint = typing.get_type_hints(JudgeOptions)[name]
    return _parameter(Flags(JudgeOptions), field, hint, name).annotation


if TYPE_CHECKING:  # what the generated flags hold
    Baseline = str
    LowerIsBetter = bool | None
    Scale = str | None
else:
    Baseline = judge_flag("baseline")
    LowerIsBetter = judge_flag("lower_is_better")
    Scale = judge_flag("scale")
DEFAULT_BASELINE = DEFAULT.baseline
