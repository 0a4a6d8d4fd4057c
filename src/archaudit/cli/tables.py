"""Terminal tables that fit the console's width without chopping a name or a word.

At 80 columns (the width when output is piped) a wide table must give way somewhere. Rich, left
to itself, folds the first column into pieces ("qk_nor / m") or crops whole columns off the
right edge. Here the widths are decided first: the first column (arm or metric names) never
wraps, every other column may wrap between words but never inside one (so "7.81e-06" and
"nominal-improver" stay whole), and when even that does not fit, the columns the caller marked
optional are left out, in its order, with a line that says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

GAP = 2
"""Spaces between two columns (rich's default padding of one on each side)."""


@dataclass(frozen=True)
class Layout:
    """Which columns to print (their indices, in order) and each one's width."""

    kept: tuple[int, ...]
    widths: tuple[int, ...]
    dropped: tuple[str, ...]


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


def fit(
    columns: Sequence[str], cells: Sequence[Sequence[str]], width: int, optional: Sequence[str]
) -> Layout:
    """Widths for `columns` within `width` characters: names whole, other cells wrapped at
    spaces only; optional columns left out (in order) until the narrowest layout fits (an
    optional column the table does not have is skipped)."""
    texts = [[column, *(row[i] for row in cells)] for i, column in enumerate(columns)]
    widest = [max(len(t) for t in column) for column in texts]
    narrowest = [widest[0], *(max(map(_longest_word, column)) for column in texts[1:])]
    kept = list(range(len(columns)))
    dropped: list[str] = []
    for name in (name for name in optional if name in columns):
        if _total(narrowest, kept) <= width:
            break
        kept.remove(columns.index(name))
        dropped.append(name)
    widths = {i: widest[i] for i in kept}
    while _total(list(widths.values()), range(len(widths))) > width:
        shrinkable = [i for i in kept if widths[i] > narrowest[i]]
        if not shrinkable:
            break
        widths[max(shrinkable, key=lambda i: (widths[i], -i))] -= 1
    return Layout(tuple(kept), tuple(widths[i] for i in kept), tuple(dropped))


def _total(widths: Sequence[int], indices: Sequence[int] | range) -> int:
    return sum(widths[i] for i in indices) + GAP * (len(indices) - 1)


def print_table(
    console: Console,
    title: str | None,
    columns: Sequence[str],
    cells: Sequence[Sequence[str]],
    optional: Sequence[str] = (),
) -> None:
    """Print formatted `cells` under `columns`: the first column left-aligned, the rest right.
    The title is printed on its own, wrapped at words to the console's width."""
    layout = fit(columns, cells, console.width, optional)
    if title:
        console.print(title)
    table = Table(box=None, header_style="bold", pad_edge=False, show_edge=False)
    for index, width in zip(layout.kept, layout.widths, strict=True):
        table.add_column(
            columns[index],
            justify="left" if index == 0 else "right",
            width=width,
            no_wrap=index == 0,
            overflow="fold",
        )
    for row in cells:
        table.add_row(*(row[i] for i in layout.kept))
    # Names alone wider than the console: print at full width and let the terminal wrap lines,
    # rather than have rich fold the names.
    console.print(table, width=max(console.width, _total(layout.widths, range(len(layout.kept)))))
    if layout.dropped:
        console.print(
            f"(left out at {console.width} columns: {', '.join(layout.dropped)}; a wider "
            "terminal or --json shows them)"
        )
