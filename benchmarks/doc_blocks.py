"""The generated blocks of the docs: a benchmark writes its table between two markers of a page
and leaves the rest of the page as it is."""

from __future__ import annotations

from pathlib import Path


def replace_block(doc: Path, begin: str, end: str, text: str) -> None:
    """Replace what lies between the markers `begin` and `end` of `doc` by `text`."""
    head, rest = doc.read_text().split(begin, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{begin}\n{text}\n{end}{tail}")
