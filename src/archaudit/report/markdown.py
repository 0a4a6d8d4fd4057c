"""The report's Markdown twin: the same sections, with each figure written as an SVG file in a
folder beside the Markdown file."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from archaudit.report.blocks import Terms
from archaudit.report.figures import Figure
from archaudit.report.sections import Block, Bullets, Grid, Notice, Paragraph, Row, Section


def render_markdown(
    title: str, subtitle: str, sections: Sequence[Section], figures_dir: str
) -> tuple[str, dict[str, str]]:
    """(Markdown text, {file name: SVG text}) with figures linked as `figures_dir/<key>.svg`."""
    files: dict[str, str] = {}
    out = [f"# {text(title)}", "", text(subtitle), ""]
    for s in sections:
        out += [f"## {text(s.title)}", "", f"*{text(s.intro)}*", ""]
        if s.absent:
            out += [f"> Not shown: {text(s.absent)}", ""]
        for block in s.blocks:
            out += [*_block(block, figures_dir, files), ""]
    return "\n".join(out), files


def _block(block: Block, figures_dir: str, files: dict[str, str]) -> list[str]:
    if isinstance(block, Figure):
        name = f"{block.key}.svg"
        files[name] = block.svg
        return [f"![{text(block.alt)}]({figures_dir}/{name})"]
    if isinstance(block, Row):
        lines: list[str] = []
        for figure in block.figures:
            lines += [*_block(figure, figures_dir, files), ""]
        return lines[:-1]
    if isinstance(block, Paragraph):
        return [text(block.text)]
    if isinstance(block, Notice):
        return [f"> {text(block.text)}"]
    if isinstance(block, Bullets):
        return [f"- {text(item)}" for item in block.items]
    if isinstance(block, Grid):
        lines = [f"*{text(block.caption)}*", ""] if block.caption else []
        lines.append("| " + " | ".join(_cell(c) for c in block.columns) + " |")
        lines.append("|" + "---|" * len(block.columns))
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in block.rows]
        return lines
    if isinstance(block, Terms):
        return [f"- **{text(name)}**: {text(definition)}" for _, name, definition in block.entries]
    raise TypeError(f"unknown report block {block!r}")


def _cell(value: str) -> str:
    return text(value).replace("|", "\\|").replace("\n", " ")


_LINK_SCHEME = re.compile(r"(javascript|vbscript|data)(\s*):", re.IGNORECASE)


def text(value: str) -> str:
    """Report text as inert Markdown: HTML escaped (as the HTML page does), no `[..](..)` link
    can form, and a script scheme loses its colon's meaning."""
    escaped = html.escape(value, quote=False).replace("[", "\\[").replace("]", "\\]")
    return _LINK_SCHEME.sub(r"\1\2\\:", escaped)
