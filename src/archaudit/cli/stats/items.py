"""`archaudit stats items SOURCE`: paired item-level tests, from the findings record."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archaudit.cli.base.options import (
    Flags,
    output_flags,
    with_flags,
)
from archaudit.cli.stats.common import (
    findings_of,
    one,
    print_notes,
    print_rows,
    printed_json,
    say_text,
    stats_app,
)
from archaudit.formatting import interval, num
from archaudit.stats.analyses.item_options import CORRECT, ItemOptions
from archaudit.stats.choices.options import DEFAULT

if TYPE_CHECKING:
    from archaudit.stats.analyses.item_pairs import ItemPairs
    from archaudit.stats.inference.paired import ItemComparison, MeasureComparison


@stats_app.command("items")
@output_flags
@with_flags
def items_command(
    source: Annotated[Path, typer.Argument(help="Audit directory (its items.csv) or items CSV.")],
    paired: Annotated[ItemOptions, Flags(ItemOptions)],
    json_: bool = False,
) -> None:
    """Paired item-level tests (bootstrap, McNemar, Wilson; t and Wilcoxon on bpb or margin);
    item vs seed uncertainty."""
    pairs = _pairs(source, paired)
    if printed_json(one([list(p.comparisons) for p in pairs]), json_):
        return
    if len(pairs) > 1:
        say_text(f"every scale of the items in turn: {', '.join(p.scale for p in pairs)}")
    for at in pairs:
        title = f"paired on the items of these checkpoints at {at.scale}" + (
            f", task {at.task}" if at.task else ""
        )
        printer = _print_item_accuracy if at.measure == CORRECT else _print_item_measure
        printer(title, list(at.comparisons))
        print_notes(_item_caveats(at.comparisons))


def _pairs(source: Path, paired: ItemOptions) -> tuple[ItemPairs, ...]:
    """The findings record's `items` slice of an audit folder; an items file, which is no
    results source, is paired by the same function directly."""
    from archaudit.audit.results.findings import Analysis, Settings
    from archaudit.stats.analyses.item_pairs import pair_items

    if not source.is_dir():
        return pair_items(source, paired)
    found = findings_of(source, (), DEFAULT, Analysis.ITEMS, settings=Settings(items=paired))
    found.require(Analysis.ITEMS, found.items)
    return found.items


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
