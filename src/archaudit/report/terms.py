"""The report's "Terms" section: the glossary's entry (`archaudit.glossary`) of every term the
page uses, each under the anchor that the page's uses link to."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from archaudit.glossary import DOC, used_in
from archaudit.report.blocks import Block, Bullets, Grid, Notice, Paragraph, Row, Section, Terms
from archaudit.report.figures import Figure


def terms_section(sections: Sequence[Section]) -> Section:
    """Every glossary term written in `sections`, with its definition."""
    used = used_in(text for section in sections for text in _texts(section))
    entries = tuple(
        (t.html_id, t.name, t.definition + (f" More: {t.more}." if t.more else "")) for t in used
    )
    intro = (
        f"The words this page uses, defined once; each place a term appears links here. "
        f"Every term of the console and the report: {DOC}."
    )
    return Section("terms", "Terms", intro, (Terms(entries),))


def _texts(section: Section) -> Iterator[str]:
    yield section.intro
    if section.absent:
        yield section.absent
    for block in section.blocks:
        yield from _block_texts(block)


def _block_texts(block: Block) -> Iterator[str]:
    if isinstance(block, Paragraph | Notice):
        yield block.text
    elif isinstance(block, Bullets):
        yield from block.items
    elif isinstance(block, Grid):
        yield block.caption
        yield from block.columns
        yield from (cell for row in block.rows for cell in row)
    elif isinstance(block, Row):
        yield from (figure.alt for figure in block.figures)
    elif isinstance(block, Figure):
        yield block.alt
