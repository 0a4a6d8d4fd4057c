"""Build the report from a source and write it: `write_report(source) -> Path`."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archaudit.audit.results.findings import Findings
from archaudit.errors import DataError
from archaudit.files import (
    atomic_write_text,
    check_output_file,
    check_output_folder,
    file_signed,
    parse_json,
    read_regular_text,
    refuse_link,
)
from archaudit.names import BASELINE
from archaudit.report.blocks import Row
from archaudit.report.data import ReportData, gather
from archaudit.report.figures import DrawingPool, Figure, drawn_apart
from archaudit.report.html import render_html
from archaudit.report.markdown import render_markdown
from archaudit.report.sections import SECTIONS, Section
from archaudit.report.terms import terms_section
from archaudit.stats.records.table import RESULTS_FILE, load_table

REPORT_FILE = "report.html"


@dataclass(frozen=True)
class Report:
    data: ReportData
    sections: tuple[Section, ...]

    @property
    def title(self) -> str:
        return f"archaudit report: {self.data.title}"

    @property
    def subtitle(self) -> str:
        p = self.data.progress
        state = f"; {p.finished} of {p.total} runs finished" if p is not None else ""
        return f"Source: {self.data.source} ({self.data.kind}){state}."

    def html(self) -> str:
        return render_html(self.title, self.subtitle, self.sections)

    def markdown(self, figures_dir: str) -> tuple[str, dict[str, str]]:
        return render_markdown(self.title, self.subtitle, self.sections, figures_dir)

    def _repr_html_(self) -> str:
        """Jupyter shows the report inline (the page is self-contained: no script, no URL)."""
        return self.html()


@contextlib.contextmanager
def frame_source(source: str | Path | Any, path: Path | None = None) -> Iterator[str | Path]:
    """A DataFrame (long shape) or `Table` as the results CSV the report reads, after the same
    checks `judge` applies: written to `path`, or by default in a temporary folder that is
    removed when the block ends (the report holds what it read). A path is itself."""
    if isinstance(source, str | Path):
        yield source
        return
    table = load_table(source)  # the checks first: a bad frame fails before anything is written
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, table.to_csv())
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="archaudit-frame-") as folder:
        atomic_write_text(Path(folder) / RESULTS_FILE, table.to_csv())
        yield Path(folder) / RESULTS_FILE


def build_report(
    source: str | Path | Any,
    *,
    metrics: Sequence[str] = (),
    baseline: str = BASELINE,
    command: str | None = None,
    workers: int = 1,
    found: Findings | None = None,
) -> Report:
    """Gather the results of SOURCE (audit directory, audit file, results CSV, or a pandas
    DataFrame in the long shape) and lay out every section, in order; `workers` > 1 draws the
    figures in that many forked processes meanwhile (the same bytes, in less wall time).
    `found`: SOURCE's `report_findings(source, metrics, baseline)` if the caller holds them."""
    with frame_source(source) as path:
        data = gather(path, metrics=metrics, baseline=baseline, command=command, found=found)
    with drawn_apart(workers) as pool:
        sections = tuple(section(data) for section in SECTIONS)
        if pool is not None:
            sections = tuple(with_figures(section, pool) for section in sections)
    return Report(data, (*sections, terms_section(sections)))


def with_figures(section: Section, pool: DrawingPool) -> Section:
    """The section with each placeholder the pool handed out replaced by its figure."""
    blocks = tuple(
        Row(tuple(pool.drawn(f) for f in block.figures))
        if isinstance(block, Row)
        else pool.drawn(block)
        if isinstance(block, Figure)
        else block
        for block in section.blocks
    )
    return dataclasses.replace(section, blocks=blocks)


def default_output(data: ReportData) -> Path:
    """<audit dir>/report.html for an audit, <name>.report.html beside a CSV."""
    path = Path(data.provenance.source)
    return path.parent / REPORT_FILE if data.kind == "audit" else path.with_suffix(".report.html")


def write_report(
    source: str | Path | Any,
    out: str | Path | None = None,
    *,
    markdown: str | Path | None = None,
    metrics: Sequence[str] = (),
    baseline: str = BASELINE,
    command: str | None = None,
    workers: int = 1,
    found: Findings | None = None,
) -> Path:
    """Write the HTML report (and, with `markdown`, its Markdown twin with figures in
    `<markdown stem>_files/`); return the HTML path. `workers`, `found`: as `build_report`'s."""
    # A DataFrame's rows are kept as the CSV beside the report (report.html → report.csv), by
    # default both in a new temporary folder: the page's own.
    if markdown is not None:
        check_markdown(Path(markdown))  # before anything is written
    if out is None and not isinstance(source, str | Path):
        out = Path(tempfile.mkdtemp(prefix="archaudit-report-")) / REPORT_FILE
    with frame_source(source, Path(out).with_suffix(".csv") if out is not None else None) as path:
        report = build_report(
            path, metrics=metrics, baseline=baseline, command=command, workers=workers, found=found
        )
    html_path = Path(out) if out is not None else default_output(report.data)
    check_apart(html_path, Path(markdown) if markdown is not None else None)
    write_html(report, html_path)
    if markdown is not None:
        write_markdown(report, Path(markdown))
    return html_path


HTML_SIGNATURE = b"<title>archaudit report: "
MARKDOWN_SIGNATURE = b"# archaudit report: "


def write_html(report: Report, path: Path, flag: str = "--out") -> Path:
    """The page at `path`: a new file, or one an earlier report wrote (its title says so)."""
    check_output_file(path, flag, file_signed(HTML_SIGNATURE))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, report.html())
    return path


def write_markdown(report: Report, path: Path) -> Path:
    """The Markdown twin at `path`, its figures as SVG files in `<stem>_files/` beside it, with
    a manifest of what it wrote (name → SHA-256). The folder is new, empty, or an earlier
    twin's: every file there listed in its manifest, unchanged since; nothing else is touched."""
    figures = check_markdown(path)
    text, files = report.markdown(figures.name)
    figures.mkdir(parents=True, exist_ok=True)
    for stale in set(_manifest(figures)) - set(files):  # an earlier twin's, checked as ours
        (figures / stale).unlink(missing_ok=True)
    for name, svg in files.items():
        atomic_write_text(figures / name, svg)
    written = {name: _sha256(svg.encode()) for name, svg in sorted(files.items())}
    atomic_write_text(figures / FIGURES_MANIFEST, json.dumps(written, indent=1) + "\n")
    atomic_write_text(path, text)
    return path


FIGURES_MANIFEST = "figures.json"
"""In a twin's figures folder: the files the twin wrote, each with its SHA-256."""


def check_apart(html: Path, markdown: Path | None) -> None:
    """Refuse, before anything is written, a Markdown twin at the page's own path, or a page
    where the twin's figures folder goes: the second write would refuse the first's file."""
    if markdown is None:
        return
    if markdown.resolve() == html.resolve():
        raise DataError(
            f"--markdown {markdown} names the HTML page's own path ({html}); give --markdown "
            "another name"
        )
    if html.resolve() == (markdown.parent / f"{markdown.stem}_files").resolve():
        raise DataError(
            f"--out {html} is the Markdown twin's figures folder; give --out another name"
        )


def check_markdown(path: Path) -> Path:
    """Refuse a twin at `path` this command may not write; its figures folder otherwise."""
    figures = path.parent / f"{path.stem}_files"
    check_output_file(path, "--markdown", file_signed(MARKDOWN_SIGNATURE))
    if path.exists():
        _check_figures(figures)
    else:
        check_output_folder(figures, "--markdown")
    return figures


def _manifest(figures: Path) -> dict[str, str]:
    text = read_regular_text(figures / FIGURES_MANIFEST)
    try:
        listed = parse_json(text, figures / FIGURES_MANIFEST) if text is not None else {}
    except DataError:
        return {}
    ok = isinstance(listed, dict) and all(isinstance(v, str) for v in listed.values())
    return {str(k): v for k, v in listed.items() if "/" not in str(k)} if ok else {}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_figures(figures: Path) -> None:
    refuse_link(figures, "--markdown")
    if figures.exists() and not figures.is_dir():
        raise DataError(
            f"{figures} is a file where the twin's figures go: give --markdown a new name"
        )
    listed = _manifest(figures) if figures.is_dir() else {}
    foreign = (
        [
            p
            for p in sorted(figures.iterdir())
            if p.name != FIGURES_MANIFEST
            and (not p.is_file() or p.is_symlink() or listed.get(p.name) != _sha256(p.read_bytes()))
        ]
        if figures.is_dir()
        else []
    )
    if foreign:
        raise DataError(
            f"{foreign[0]} is not a figure an earlier report wrote (or it changed since: "
            f"{FIGURES_MANIFEST} lists what the report wrote); give --markdown a new name"
        )
