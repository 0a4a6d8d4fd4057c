"""`archaudit stats items SOURCE`: paired item-level tests, from the findings record."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archaudit.cli.options import (
    Baseline,
    output_flags,
)
from archaudit.cli.stats.common import (
    Boot,
    OptScale,
    Seed,
    print_notes,
    print_rows,
    printed_json,
    say_text,
    stats_app,
)
from archaudit.errors import ConfigError
from archaudit.formatting import interval, num
from archaudit.stats.options import DEFAULT

if TYPE_CHECKING:
    from archaudit.stats.inference.paired import ItemComparison, MeasureComparison


@stats_app.command("items")
@output_flags
def items_command(
    source: Annotated[Path, typer.Argument(help="Audit directory (its items.csv) or items CSV.")],
    scale: OptScale = None,
    baseline: Baseline = DEFAULT.baseline,
    task: Annotated[str | None, typer.Option("--task", help="One task (default: all).")] = None,
    measure: Annotated[
        str,
        typer.Option(
            "--measure",
            metavar="correct|bpb|margin",
            help="What is paired per item: correctness (bootstrap, McNemar), or the gold "
            "continuation's bits per byte (lower is better) or the choice margin (higher is "
            "better), by a paired t-test and a Wilcoxon signed-rank test.",
        ),
    ] = "correct",
    n_boot: Boot = 2000,
    seed: Seed = 0,
    json_: bool = False,
) -> None:
    """Paired item-level tests (bootstrap, McNemar, Wilson; t and Wilcoxon on bpb or margin);
    item vs seed uncertainty."""
    from archaudit.stats import compare_item_measure, compare_items, load_items

    items = load_items(source)
    arms = [arm for arm in items.arms if arm != baseline]
    if not arms:
        raise ConfigError(f"{source}: no arm but {baseline!r} to compare: nothing to judge")
    if scale is not None:
        items.check_scale(scale)
    scales = [scale] if scale else list(items.scales)
    if len(scales) > 1 and not json_:
        say_text(f"every scale of the items in turn: {', '.join(scales)}")
    found = []
    for at in scales:
        results: list[ItemComparison] | list[MeasureComparison]
        if measure == "correct":
            results = [
                compare_items(items, arm, baseline, at, task=task, n_boot=n_boot, seed=seed)
                for arm in arms
            ]
        else:
            results = [
                compare_item_measure(
                    items, arm, baseline, at, measure, task=task, n_boot=n_boot, seed=seed
                )
                for arm in arms
            ]
        found.append(results)
        if not json_:
            title = f"paired on the items of these checkpoints at {at}" + (
                f", task {task}" if task else ""
            )
            (_print_item_accuracy if measure == "correct" else _print_item_measure)(title, results)
            print_notes(_item_caveats(results))
    printed_json(found[0] if len(found) == 1 else found, json_)


def _item_caveats(results: Sequence[ItemComparison | MeasureComparison]) -> list[str]:
    """What an item-level p does not say: it tests these trained checkpoints on these items,
    not the modification across seeds (a small p here can sit beside a within-noise verdict)."""
    notes = [
        "these tests resample the benchmark items of these checkpoints, not the seeds: a small "
        "p says these trained models differ on these items, not that the modification beats "
        "the baseline across training seeds (that is the seed-level verdict of `archaudit "
        "stats`)"
    ]
    for r in results:
        if not math.isfinite(r.se_seeds):
            notes.append(f"{r.arm}: one seed on a side, so the seed noise is not measured")
        elif r.se_seeds > r.se_items:
            notes.append(
                f"{r.arm}: SE over seeds {num(r.se_seeds)} exceeds SE over items "
                f"{num(r.se_items)}: the seeds, not the items, limit any claim"
            )
    return notes


def _print_item_accuracy(title: str, results: list) -> None:
    print_rows(
        title,
        (
            "arm",
            "items",
            "Δ accuracy",
            "95% interval",
            "p (bootstrap)",
            "SE items",
            "SE seeds",
            "McNemar p",
        ),
        [
            (
                r.arm,
                r.n_items,
                r.difference.difference,
                interval((r.difference.low, r.difference.high)),
                r.difference.p,
                r.se_items,
                r.se_seeds,
                ", ".join(num(m.p) for m in r.mcnemar),
            )
            for r in results
        ],
        optional=("McNemar p", "SE items", "items"),
    )


def _print_item_measure(title: str, results: list) -> None:
    measure = results[0].measure if results else ""
    better = "higher" if results and results[0].higher_is_better else "lower"
    print_rows(
        f"{title}, {measure} ({better} is better; Δ > 0 means better)",
        (
            "arm",
            "items",
            f"Δ {measure}",
            "95% interval",
            "favours",
            "t-test p",
            "Wilcoxon p",
            "SE seeds",
        ),
        [
            (
                r.arm,
                r.n_items,
                r.difference.difference,
                interval((r.difference.low, r.difference.high)),
                _favours(r.difference.difference),
                r.t_test.p,
                r.wilcoxon.p,
                r.se_seeds,
            )
            for r in results
        ],
        optional=("Wilcoxon p", "items", "favours"),
    )


def _favours(delta: float) -> str:
    return "arm" if delta > 0 else "baseline" if delta < 0 else "neither"
