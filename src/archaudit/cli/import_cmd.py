"""`archaudit import lm-eval RESULTS_DIR... --out DIR`: lm-eval output → results.csv and
items.csv for `archaudit stats`. A thin face over `archaudit.evals.lmeval_results`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from archaudit.cli.base.app import app
from archaudit.cli.base.options import Flags, emit, output_flags, with_flags


@dataclass(frozen=True, kw_only=True)
class ImportRules:
    """Where each imported run's arm, seed and scale come from."""

    arm_from: str = "auto"
    """Where a run's arm comes from: dir (its output folder's name) | parent | model | fewshot |
    seed | params | regex:PATTERN (one group, on the results file's path); auto: dir, and the
    model's name for runs of several models in one output folder."""
    seed_from: str = "auto"
    """Where its seed comes from (as --arm-from); auto: a seed-N folder on the path, else the
    arm's runs numbered in path order."""
    scale_from: str = "auto"
    """Where its scale comes from (as --arm-from); auto: parameter counts within 1.5x of each
    other share one scale."""


import_app = typer.Typer(
    help="Bring other tools' results in, to judge them here.", no_args_is_help=True
)
app.add_typer(import_app, name="import")


@import_app.command("lm-eval")
@output_flags
@with_flags
def import_lmeval_command(
    results: Annotated[
        list[Path],
        typer.Argument(
            help="lm-eval --output_path folders (or results_*.json files); searched recursively."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Folder for results.csv and items.csv.")],
    *,
    rules: Annotated[ImportRules, Flags(ImportRules)],
    json_: bool = False,
) -> None:
    """Read lm-eval results (and the per-item samples of --log_samples) into OUT/results.csv
    (task/metric, task/score and downstream_avg per run) and OUT/items.csv (each item's 0/1
    by the task's first metric), so that `archaudit stats OUT` judges the runs and
    `archaudit stats items OUT` pairs them item by item. OUT is written whole or not at all,
    and only when it is new, empty or an earlier import (its import.json lists its files)."""
    from archaudit.evals.lmeval_results import import_lmeval

    result = import_lmeval(
        results,
        out,
        arm_from=rules.arm_from,
        seed_from=rules.seed_from,
        scale_from=rules.scale_from,
    )
    if json_:
        emit(result)
        return
    for choice in result.choices:
        typer.echo(choice)
    for run in result.runs:
        typer.echo(
            f"{run.arm} / {run.scale} / seed {run.seed}: {', '.join(run.tasks)} "
            f"({run.items} items) ← {run.path}"
        )
    typer.echo(f"wrote {result.results}" + (f" and {result.items}" if result.items else ""))
