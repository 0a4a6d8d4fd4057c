"""`archaudit eval MODEL --suite NAME [--limit N] [--json]`: score a model on a suite."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from archaudit.audit.setup.spec import EvalSpec
from archaudit.cli.base.app import app
from archaudit.cli.base.options import (
    Device,
    Flags,
    Plugins,
    load_plugin_modules,
    output_flags,
    torch_device,
    with_flags,
)
from archaudit.formatting import MISSING, VALUE_DIGITS, interval, num
from archaudit.ranges import Range

if TYPE_CHECKING:
    from archaudit.evals.suites import SuiteResult


@dataclass(frozen=True, kw_only=True)
class Scoring:
    """Where `eval` reads its benchmarks and writes its result, and how it batches."""

    out: Path | None = None
    """Write the full result, per-item outputs included, here."""
    data_root: Path | None = None
    """Benchmark data root [default: $ARCHAUDIT_DATA or ../shared/data]."""
    batch_size: int = field(default=32, metadata={"range": Range(1)})
    """Rows per forward pass."""
    groups: bool = False
    """Also print accuracy per group (paradigm, length × depth)."""


@app.command("eval")
@output_flags
@with_flags
def eval_command(
    model: Annotated[
        str,
        typer.Argument(
            help="Run/checkpoint directory, Hugging Face directory, .gguf file, or KIND:PATH."
        ),
    ],
    *,
    evaluation: Annotated[EvalSpec, Flags(EvalSpec)],
    json_: bool = False,
    scoring: Annotated[Scoring, Flags(Scoring)],
    device: Device = "",
    quiet: bool = False,
    plugin: Plugins = None,
) -> None:
    """Score MODEL on a suite: accuracy with Wilson 95% intervals per task, the macro averages
    (downstream_avg, leaving out tasks at chance; downstream_bpb), and the held-out loss with
    its window, stride and context."""
    from archaudit.evals import evaluate

    load_plugin_modules(plugin)

    result = evaluate(
        model,
        evaluation.suite,
        limit=evaluation.limit,
        out_path=scoring.out,
        device=torch_device(device),
        batch_size=scoring.batch_size,
        data_root=scoring.data_root,
        show_progress=not (quiet or json_),
    )
    if json_:
        typer.echo(result.to_json(include_items=False))
        return
    _print_result(result, groups=scoring.groups, out=scoring.out)


def _print_result(result: SuiteResult, *, groups: bool, out: Path | None) -> None:
    """The suite's table, then per-group accuracy (with --groups), cut contexts, the macro
    averages and the held-out loss."""
    table = Table(title=f"{result.model} on suite {result.suite!r} ({result.seconds:.0f} s)")
    for column in ("task", "n", "acc [95% CI]", "acc_norm [95% CI]", "metric"):
        table.add_column(column, justify="left" if column == "task" else "right")
    for name, task in result.tasks.items():
        cells = [
            MISSING if a is None else f"{num(a.value)} {interval((a.low, a.high))}"
            for a in (task.acc, task.acc_norm)
        ]
        metric = task.metric + ("*" if task.at_chance else "")  # * at chance: left out
        table.add_row(name, str(task.acc.n), *cells, metric)
    console = Console()
    console.print(table)
    for name, task in result.tasks.items() if groups else ():
        for group, a in task.groups.items():
            console.print(f"  {name}/{group}: {num(a.value)} {interval((a.low, a.high))} (n={a.n})")
    for name, task in result.tasks.items():
        if task.truncated_contexts:
            console.print(f"{name}: {task.truncated_contexts} contexts cut from the left to fit")
    if result.tasks:
        left_out = [n for n, t in result.tasks.items() if t.at_chance]
        note = f" (leaves out the tasks at chance*: {', '.join(left_out)})" if left_out else ""
        if not result.informative:
            note = " (every task at chance*: their plain average, which carries no signal)"
        console.print(f"downstream_avg = {num(result.downstream_avg, VALUE_DIGITS)}{note}")
        bpb = num(result.downstream_bpb, VALUE_DIGITS)
        console.print(f"downstream_bpb = {bpb} (gold bits per byte)")
    if result.heldout:
        h = result.heldout
        console.print(
            f"held-out: {num(h.loss, VALUE_DIGITS)} nats/token, "
            f"{num(h.bits_per_byte, VALUE_DIGITS)} bits/byte "
            f"(window {h.window}, stride {h.stride}, context {h.context}, {h.windows} windows)"
        )
    if out:
        console.print(f"per-item results: {out}")
