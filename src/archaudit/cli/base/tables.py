"""Terminal tables and prose that fit the console's width without splitting a number or a word.

At 80 columns (the width when output is piped) a wide table must give way somewhere. Rich, left
to itself, folds cells into pieces ("qk_nor / m", "0.36 / 6") or crops whole columns, and it
never prints wider than the console, whatever width it is asked for. Here the lines are laid out
first and printed as they are: the first column (arm or metric names) never wraps, every other
column may wrap between words but never inside one (so "7.81e-06" and "nominal-improver" stay
whole); when even that does not fit, the columns the caller marked optional are left out, in its
order, with a line that says so; and when the rest still does not fit, each row becomes a block
(its name, then "column: value" items packed into lines), which fits any width from the
longest single item up. Prose is wrapped at spaces only: a word longer than the line stands
whole on a line of its own.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console

GAP = 2
"""Spaces between two columns."""

ITEM_GAP = "  "
"""Between two "column: value" items of a row printed as a block."""

INDENT = "  "
"""Before each line of a block's items."""


@dataclass(frozen=True)
class Layout:
    """Which columns to print (their indices, in order) and each one's width; `stacked`: the
    kept columns do not fit side by side, so each row is printed as a block."""

    kept: tuple[int, ...]
    widths: tuple[int, ...]
    dropped: tuple[str, ...]
    stacked: bool = False


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


def fit(
    columns: Sequence[str], cells: Sequence[Sequence[str]], width: int, optional: Sequence[str]
) -> Layout:
    """Widths for `columns` within `width` characters: names whole, other cells wrapped at
    spaces only; optional columns left out (in order) until the narrowest layout fits (an
    optional column the table does not have is skipped); every column, as blocks, when even
    the narrowest layout of the rest is wider than `width`."""
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
    if _total(narrowest, kept) > width:
        every = tuple(range(len(columns)))
        return Layout(every, tuple(widest), (), stacked=True)
    widths = {i: widest[i] for i in kept}
    while _total(list(widths.values()), range(len(widths))) > width:
        shrinkable = [i for i in kept if widths[i] > narrowest[i]]
        widths[max(shrinkable, key=lambda i: (widths[i], -i))] -= 1
    return Layout(tuple(kept), tuple(widths[i] for i in kept), tuple(dropped))


def _total(widths: Sequence[int], indices: Sequence[int] | range) -> int:
    return sum(widths[i] for i in indices) + GAP * (len(indices) - 1)


def wrap_words(text: str, width: int, indent: str = "") -> list[str]:
    """`text` as lines of at most `width` characters, broken at spaces only (never inside a
    word, a number or at a hyphen); each of its own lines is wrapped on its own; `indent` starts
    every line after the first."""
    lines: list[str] = []
    for line in text.split("\n"):
        wrapped = textwrap.wrap(
            line,
            width=max(width, 1),
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        lines.extend(wrapped or [""])
    return lines


def say(console: Console, text: str, *, indent: str = "", style: str | None = None) -> None:
    """Print prose wrapped at the console's width, words and numbers whole, never as markup."""
    for line in wrap_words(text, console.width, indent):
        console.print(line, style=style, markup=False, highlight=False, soft_wrap=True)


def table_lines(
    columns: Sequence[str], cells: Sequence[Sequence[str]], layout: Layout, width: int
) -> list[tuple[str, bool]]:
    """The table as (line, is header) pairs: side by side, or one block per row of at most
    `width` characters."""
    if layout.stacked:
        return [(line, False) for row in cells for line in _block(columns, row, layout, width)]
    header = _row_lines(list(columns), layout)
    body = [line for row in cells for line in _row_lines(list(row), layout)]
    return [*((line, True) for line in header), *((line, False) for line in body)]


def _row_lines(row: Sequence[str], layout: Layout) -> list[str]:
    """One row's lines: each kept cell wrapped to its column at spaces, the first column
    left-aligned, the rest right-aligned, all cells top-aligned."""
    wrapped = [
        [row[i]] if position == 0 else wrap_words(row[i], width)
        for position, (i, width) in enumerate(zip(layout.kept, layout.widths, strict=True))
    ]
    height = max(len(lines) for lines in wrapped)
    lines = []
    for k in range(height):
        parts = [
            (cell[k] if k < len(cell) else "").ljust(width)
            if position == 0
            else (cell[k] if k < len(cell) else "").rjust(width)
            for position, (cell, width) in enumerate(zip(wrapped, layout.widths, strict=True))
        ]
        lines.append((" " * GAP).join(parts).rstrip())
    return lines


def _block(columns: Sequence[str], row: Sequence[str], layout: Layout, width: int) -> list[str]:
    """A row that does not fit side by side: its first cell on a line, then "column: value"
    items packed into indented lines of at most `width` characters (an item wider than that
    stands alone on its line, whole)."""
    items = [f"{columns[i]}: {row[i]}" for i in layout.kept[1:]]
    return [row[layout.kept[0]], *(INDENT + line for line in _pack(items, width))]


def _pack(items: Sequence[str], width: int) -> list[str]:
    lines: list[str] = []
    for item in items:
        candidate = f"{lines[-1]}{ITEM_GAP}{item}" if lines else item
        if lines and len(INDENT) + len(candidate) <= width:
            lines[-1] = candidate
        else:
            lines.append(item)
    return lines


def print_table(
    console: Console,
    title: str | None,
    columns: Sequence[str],
    cells: Sequence[Sequence[str]],
    optional: Sequence[str] = (),
) -> None:
    """Print formatted `cells` under `columns` within the console's width (`fit`). The title
    is printed on its own, wrapped at words."""
    layout = fit(columns, cells, console.width, optional)
    if title:
        say(console, title)
    for line, header in table_lines(columns, cells, layout, console.width):
        style = "bold" if header else None
        console.print(line, style=style, markup=False, highlight=False, soft_wrap=True)
    if layout.dropped:
        say(
            console,
            f"(left out at {console.width} columns: {', '.join(layout.dropped)}; a wider "
            "terminal or --json shows them)",
        )
