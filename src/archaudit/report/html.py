"""The report as one self-contained HTML page: inline SVG, inline CSS, no script, no font, no
URL of any kind (the only links are to the page's own sections and, from each term the page
uses, to its definition in the Terms section: `archaudit.glossary`)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from archaudit.glossary import link_terms
from archaudit.report.blocks import Terms
from archaudit.report.figures import Figure, inline_svg
from archaudit.report.sections import Block, Bullets, Grid, Notice, Paragraph, Row, Section

CSS = """
:root { color-scheme: light; }
body { margin: 0 auto; max-width: 72rem; padding: 1rem; line-height: 1.45;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2rem; }
.meta, .intro { color: #444; }
.absent { background: #f4f4f4; border-left: 4px solid #999; padding: .5rem .8rem; }
.partial { background: #fff4d6; border-left: 4px solid #d9a400; padding: .5rem .8rem; }
nav ol { columns: 2; padding-left: 1.2rem; }
figure { margin: 1rem 0; }
.figures { display: flex; flex-wrap: wrap; gap: 0 1.2rem; }
.figures figure { flex: 1 1 22rem; min-width: 0; }
figure svg { display: block; max-width: 100%; height: auto; }
figcaption { font-size: .85rem; color: #555; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: .82rem; margin: 0 0 1rem; }
.caption { font-size: .85rem; color: #444; margin: .8rem 0 .2rem; }
th, td { border: 1px solid #ddd; padding: .2rem .45rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
tbody tr:nth-child(even) { background: #fafafa; }
/* The first column (the arm) stays in view while a wide table scrolls sideways. */
th:first-child, td:first-child { position: sticky; left: 0; background: #fff;
  box-shadow: 1px 0 0 #ddd; }
th:first-child { background: #f2f2f2; }
tbody tr:nth-child(even) td:first-child { background: #fafafa; }
a.term { color: inherit; text-decoration: underline dotted #888; text-underline-offset: 2px; }
dl.terms dt { font-weight: 600; margin-top: .6rem; }
dl.terms dd { margin: .1rem 0 0 1.2rem; color: #333; }
dl.terms dt:target { background: #fff4d6; }
@media (max-width: 40rem) {
  body { padding: .6rem; font-size: .95rem; }
  nav ol { columns: 1; }
  table { font-size: .75rem; }
  /* A wide table scrolls in its box: long cells (warnings) wrap at a readable width instead
     of squeezing into a column one word wide and many lines tall. */
  .scroll table { width: max-content; }
  .scroll td, .scroll th { max-width: 16rem; }
  .wide::before { content: attr(data-columns) " columns: the table scrolls sideways \\2192";
    display: block; position: sticky; left: 0; font-size: .75rem; color: #666; }
  /* Figures keep their drawn size (text ≥ 9 px) and scroll, rather than shrink to 5-6 px text. */
  figure { overflow-x: auto; }
  figure svg { min-width: 30rem; }
}
@media print {
  body { max-width: none; font-size: 10pt; }
  nav { display: none; }
  h2 { break-after: avoid; }
  figure, table, .absent { break-inside: avoid; }
  .caption { break-after: avoid; }
  .scroll { overflow: visible; }
}
"""


WIDE = 4
"""Tables with more columns than this carry a "scrolls sideways" line on a phone."""


def render_html(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    toc = "".join(
        f'<li><a href="#{s.key}">{escape(s.title)}</a>{" (absent)" if s.absent else ""}</li>'
        for s in sections
    )
    body = "\n".join(_section(s) for s in sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f'<header><h1>{escape(title)}</h1><p class="meta">{escape(subtitle)}</p></header>\n'
        f"<nav><ol>{toc}</ol></nav>\n{body}\n</body>\n</html>\n"
    )


def _section(s: Section) -> str:
    parts = [f'<section id="{s.key}">', f"<h2>{escape(s.title)}</h2>"]
    parts.append(f'<p class="intro">{_text(s.intro)}</p>')
    if s.absent:
        parts.append(f'<p class="absent">Not shown: {_text(s.absent)}</p>')
    parts += [_block(b) for b in s.blocks]
    parts.append("</section>")
    return "\n".join(parts)


def _block(block: Block) -> str:
    if isinstance(block, Figure):
        return f"<figure>{inline_svg(block)}<figcaption>{_text(block.alt)}</figcaption></figure>"
    if isinstance(block, Row):
        return '<div class="figures">' + "".join(_block(f) for f in block.figures) + "</div>"
    if isinstance(block, Paragraph):
        css = ' class="partial"' if block.text.startswith("Partial report") else ""
        return f"<p{css}>{_text(block.text)}</p>"
    if isinstance(block, Notice):
        return f'<p class="absent">{_text(block.text)}</p>'
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{_text(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Grid):
        # The caption stays outside the scrolling box, so that a phone shows all of it.
        caption = f'<p class="caption">{_text(block.caption)}</p>' if block.caption else ""
        head = "".join(f"<th>{escape(c)}</th>" for c in block.columns)
        rows = "".join(
            "<tr>" + "".join(f"<td>{_text(cell)}</td>" for cell in row) + "</tr>"
            for row in block.rows
        )
        # A phone shows a wide table's first columns only: say that the rest scrolls into view.
        wide = f' wide" data-columns="{len(block.columns)}' if len(block.columns) > WIDE else ""
        return (
            f'{caption}<div class="scroll{wide}"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
        )
    if isinstance(block, Terms):
        return (
            '<dl class="terms">'
            + "".join(
                f'<dt id="{entry_id}">{escape(name)}</dt><dd>{escape(definition)}</dd>'
                for entry_id, name, definition in block.entries
            )
            + "</dl>"
        )
    raise TypeError(f"unknown report block {block!r}")


def _text(value: str) -> str:
    """Report text, escaped, with each glossary term linked to its entry in Terms."""
    return link_terms(escape(value))
