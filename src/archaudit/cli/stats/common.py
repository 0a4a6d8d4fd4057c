"""What every `archaudit stats` command shares: the `stats` group (`stats SOURCE` is `stats
verdicts SOURCE`), the findings it reads, the options and arguments several commands take,
and the console helpers every table and note is printed with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from typer.core import TyperGroup

from archaudit.cli.base.app import app
from archaudit.cli.base.options import (
    emit,
)
from archaudit.cli.base.tables import print_table, say
from archaudit.errors import ConfigError
from archaudit.formatting import MISSING, num
from archaudit.stats.choices.options import JudgeOptions

if TYPE_CHECKING:
    from archaudit.audit.results.findings import Analysis, Findings, Settings
    from archaudit.stats import Table


class _VerdictsByDefault(TyperGroup):
    """Reads `stats SOURCE ...` as `stats verdicts SOURCE ...`: a group cannot take a positional
    argument and sub-commands at once, so the default sub-command is spliced in."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's vendored Context
        if not args:  # the whole help (120 lines) answered a missing source
            raise ConfigError(
                "archaudit stats needs a source: archaudit stats RUNS_DIR (an audit folder, "
                "audit file or results CSV) — see archaudit stats --help"
            )
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["verdicts", *args]
        return super().parse_args(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The group's help, then the default table's own (`stats SOURCE` runs `verdicts`):
        its options were otherwise only under `stats verdicts --help`."""
        super().format_help(ctx, formatter)
        default = self.commands["verdicts"]
        console().print("\n`archaudit stats SOURCE` is `archaudit stats verdicts SOURCE`:")
        default.format_help(type(ctx)(default, info_name="verdicts", parent=ctx), formatter)


stats_app = typer.Typer(
    cls=_VerdictsByDefault,
    no_args_is_help=True,
    help="Judge arms against the seed noise floor. `archaudit stats SOURCE --metric M` prints "
    "verdicts; the sub-commands run the other analyses of docs/protocol.md.",
)


app.add_typer(stats_app, name="stats")


Source = Annotated[Path, typer.Argument(help="Audit directory (its finished runs) or a CSV.")]


OptMetric = Annotated[
    str | None,
    typer.Option("--metric", help="Metric to judge [default: an audit's primary metrics, each]."),
]


def console() -> Console:
    # Built per use so that COLUMNS set after import (tests, wrappers) is honoured.
    return Console(highlight=False)


def findings_of(
    source: Path,
    metric: str | Sequence[str] | None,
    options: JudgeOptions,
    *analyses: Analysis,
    each_scale: bool | None = None,
    loop: bool = True,
    settings: Settings | None = None,
) -> Findings:
    """The slices `analyses` of SOURCE's findings (`audit.results.findings`: the one loader and the
    one loop over baselines, metrics and scales), `metric` alone when named."""
    from archaudit.audit.results.findings import Asked, Settings, findings

    named = [metric] if isinstance(metric, str) else list(metric or ())
    asked = Asked(frozenset(analyses), each_scale, loop, settings=settings or Settings())
    return findings(source, named, options, asked=asked)


def load_table(source: Path) -> tuple[Table, list[str]]:
    """SOURCE's table and what its reader must know (`audit.results.source.load_source`)."""
    from archaudit.audit.results.source import load_source

    loaded = load_source(source)
    assert loaded.table is not None  # not partial: an audit with no finished run raised
    return loaded.table, list(loaded.notes)


def table_of(found: Findings) -> Table:
    assert found.table is not None  # a CLI findings record is never partial
    return found.table


def one(results: Sequence[Any]) -> Any:
    """One result as itself, several as a list (the JSON of one analysis over many)."""
    return results[0] if len(results) == 1 else list(results)


T = TypeVar("T")


def show(
    found: Findings,
    analysis: Analysis,
    results: Sequence[T],
    json_: bool,
    printer: Callable[[T], None],
    *,
    scales_only: bool = False,
) -> None:
    """One slice of the findings: refused with its reason when empty, else its JSON, or the
    defaults line and each result printed."""
    found.require(analysis, results)
    if printed_json(one(results), json_):
        return
    say_defaults(found, scales_only=scales_only)
    for result in results:
        printer(result)


def say_defaults(found: Findings, *, scales_only: bool = False) -> None:
    """The line that says what the source chose where the command line named nothing."""
    said = [d for d in found.defaults if not scales_only or not d.startswith("metrics")]
    if said:
        where = "the audit folder" if found.kind == "audit" else "the table"
        say_text(f"defaults from {where}: {'; '.join(said)}")


def absent_notes(found: Findings) -> list[str]:
    return [f"not computed ({a.analysis} {a.where}): {a.reason}" for a in found.absent]


def print_rows(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence],
    optional: Sequence[str] = (),
) -> None:
    """A table that fits the console (cli/base/tables.py): names whole, words never chopped, the
    `optional` columns left out in that order when the rest would not fit."""
    print_table(console(), title, columns, [[cell(v) for v in row] for row in rows], optional)


def say_text(text: str, indent: str = "") -> None:
    """Prose at the console's width, broken at spaces only (`cli.base.tables.say`)."""
    say(console(), text, indent=indent)


def print_notes(notes: Sequence[str]) -> None:
    for note in notes:
        say_text(f"- {note}", indent="  ")


def cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return num(value)
    return MISSING if value is None else str(value)


def no_table_names(options: JudgeOptions) -> None:
    """Refuse arm names where there is no table to find them in (`stats power` without SOURCE,
    `simulate-null` without a --like table): --arms, --anchor and --exclude name a table's arms."""
    arm_names(options.arms, table=False)
    for flag, names in (("--anchor", options.anchors), ("--exclude", options.exclude)):
        if names:
            raise ConfigError(
                f"{flag} {','.join(names)}: arm names need SOURCE (or a --like table)"
            )


def arm_names(values: Sequence[str] | None, *, table: bool = True) -> list[str] | None:
    """Arm names from a repeatable flag that also takes commas: --arms a,b --arms c.

    `--arms` always names arms of a table. On a command without one (`table=False`) names are
    refused, and a bare number (the old `--arms 19` of `stats power` and `simulate-null`) is
    refused with the flag that takes a count.
    """
    if not values:
        return None
    names = [name for value in values for name in value.split(",") if name]
    if table:
        return names
    count = next((name for name in names if name.isdigit()), None)
    if count is not None:
        raise ConfigError(
            f"--arms takes arm names, not a count: for {count} arms write --n-arms {count}"
        )
    raise ConfigError(
        f"--arms {','.join(names)}: arm names need SOURCE (or a --like table); the number "
        "of arms is --n-arms"
    )


def printed_json(result: object, json_: bool) -> bool:
    """Print `result` as JSON when --json was given; say whether it was."""
    if json_:
        emit(result)
    return json_
