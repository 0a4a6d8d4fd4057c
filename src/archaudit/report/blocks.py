"""The building blocks of the report's sections: what html.py and markdown.py know how to
render."""

from __future__ import annotations

from dataclasses import dataclass

from archaudit.report.figures import Figure


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Notice:
    """What stands where a figure would be when its numbers cannot carry it."""

    text: str


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Grid:
    """A table: a caption, column names and rows of already formatted cells."""

    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Row:
    """Figures side by side where the page is wide enough, stacked on a phone (each at a
    legible size instead of shrunk into one wide figure)."""

    figures: tuple[Figure, ...]


@dataclass(frozen=True)
class Terms:
    """Definitions, each under an id that the page's uses of the term link to."""

    entries: tuple[tuple[str, str, str], ...]
    """(id, term, definition)."""


Block = Paragraph | Notice | Bullets | Grid | Figure | Row | Terms


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    intro: str
    """What the section shows, for a reader who is not a statistician."""
    blocks: tuple[Block, ...] = ()
    absent: str | None = None
    """Why the section has no content (None when it has)."""
