"""`archaudit report SOURCE`: the audit report as one self-contained HTML page (and a Markdown
twin). A thin face over `archaudit.report.write_report`."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archaudit.cli.base.app import app
from archaudit.cli.base.options import (
    DEFAULT_BASELINE,
    Baseline,
    Flags,
    emit,
    output_flags,
    with_flags,
)
from archaudit.errors import ArchauditError
from archaudit.progress import warn

if TYPE_CHECKING:
    from archaudit.audit.results.findings import Findings


def command_line() -> str:
    """The command that is running, for the report's provenance."""
    return shlex.join(["archaudit", *sys.argv[1:]])


@dataclass(frozen=True, kw_only=True)
class Pages:
    """Where `report` writes its page and its Markdown twin."""

    out: Path | None = None
    """HTML file [default: <audit>/report.html, or <csv>.report.html]."""
    markdown: Path | None = None
    """Also write a Markdown twin here (figures in <name>_files/)."""


@app.command()
@output_flags
@with_flags
def report(
    source: Annotated[
        Path, typer.Argument(help="Audit directory, audit file (TOML) or results CSV.")
    ],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", help="Metric to judge (repeatable) [default: val_loss, downstream_avg]."
        ),
    ] = None,
    baseline: Baseline = DEFAULT_BASELINE,
    *,
    pages: Annotated[Pages, Flags(Pages)],
    json_: bool = False,
) -> None:
    """Write the audit report: the answer first, then the plots and tables behind it. One HTML
    file with everything inline (no script, font or URL), readable printed and on a phone."""
    from archaudit.report import build_report
    from archaudit.report.build import (
        check_apart,
        check_markdown,
        default_output,
        write_html,
        write_markdown,
    )

    out, markdown = pages.out, pages.markdown
    if markdown is not None:
        check_markdown(markdown)  # before the page is written
        if out is not None:
            check_apart(out, markdown)  # before the report is built
    built = build_report(source, metrics=metric or (), baseline=baseline, command=command_line())
    html_path = out or default_output(built.data)
    check_apart(html_path, markdown)
    html_path = write_html(built, html_path)
    md_path = write_markdown(built, markdown) if markdown is not None else None
    if json_:
        sections = [
            {"key": s.key, "title": s.title, "present": s.absent is None, "absent": s.absent}
            for s in built.sections
        ]
        emit({"html": html_path, "markdown": md_path, "sections": sections})
        return
    typer.echo(f"report: {html_path}" + (f" (Markdown: {md_path})" if md_path else ""))


def report_audit(
    audit_dir: Path, *, err: bool = False, workers: int = 1, found: Findings | None = None
) -> None:
    """Write <audit_dir>/report.html and print its path (on stderr with `err`), its figures drawn
    by `workers` processes, from `found` (the audit's `report_findings`) when given; what `run`,
    `demo` and `status --report` end with. Without the `report` extra: a hint, not a failure."""
    try:
        from archaudit.report import write_report
    except ArchauditError as error:
        warn(str(error))
        return
    path = write_report(audit_dir, command=command_line(), workers=workers, found=found)
    typer.echo(f"report: {path}", err=err)
