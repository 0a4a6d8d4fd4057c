"""The report's Markdown twin: the same sections, with each figure written as an SVG file in a
folder beside the Markdown file."""

from __future__ import annotations

from collections.abc import Sequence

from archaudit.report.figures import Figure
from archaudit.report.sections import Block, Bullets, Grid, Notice, Paragraph, Row, Section


def render_markdown(
    title: str, subtitle: str, sections: Sequence[Section], figures_dir: str
) -> tuple[str, dict[str, str]]:
    """(Markdown text, {file name: SVG text}) with figures linked as `figures_dir/<key>.svg`."""
    files: dict[str, str] = {}
    out = [f"# {title}", "", subtitle, ""]
    for s in sections:
        out += [f"## {s.title}", "", f"*{s.intro}*", ""]
        if s.absent:
            out += [f"> Not shown: {s.absent}", ""]
        for block in s.blocks:
            out += [*_block(block, figures_dir, files), ""]
    return "\n".join(out), files


def _block(block: Block, figures_dir: str, files: dict[str, str]) -> list[str]:
    if isinstance(block, Figure):
        name = f"{block.key}.svg"
        files[name] = block.svg
        return [f"![{block.alt}]({figures_dir}/{name})"]
    if isinstance(block, Row):
        lines: list[str] = []
        for figure in block.figures:
            lines += [*_block(figure, figures_dir, files), ""]
        return lines[:-1]
    if isinstance(block, Paragraph):
        return [block.text]
    if isinstance(block, Notice):
        return [f"> {block.text}"]
    if isinstance(block, Bullets):
        return [f"- {item}" for item in block.items]
    if isinstance(block, Grid):
        lines = [f"*{block.caption}*", ""] if block.caption else []
        lines.append("| " + " | ".join(_cell(c) for c in block.columns) + " |")
        lines.append("|" + "---|" * len(block.columns))
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in block.rows]
        return lines
    raise TypeError(f"unknown report block {block!r}")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
