"""The end of `run` and `demo` (issue 45): the findings record is computed once and handed to
the verdict tables and to the report, which then computes nothing again; a DataFrame's report
leaves no temporary folder behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from archaudit.audit.results.findings import report_findings
from archaudit.report import Report, build_report, write_report
from archaudit.report import data as report_data
from archaudit.stats import load_table


def test_a_report_from_given_findings_computes_none_and_is_the_same_page(
    audit_dir: Path, audit_report: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = report_findings(audit_dir)

    def computed_again(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report computed the findings it was given")

    monkeypatch.setattr(report_data, "report_findings", computed_again)
    given = build_report(audit_dir, command="archaudit report runs/fake", found=found)
    assert given.data.findings is found
    assert given.html() == audit_report.html()


def frame_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("archaudit-frame-*")}


def test_a_dataframes_report_removes_its_temporary_csv(
    results_csv: Path, csv_report: Report
) -> None:
    pytest.importorskip("pandas")
    frame = load_table(results_csv).to_frame()
    before = frame_folders()
    report = build_report(frame)
    assert frame_folders() == before
    assert [s.key for s in report.sections] == [s.key for s in csv_report.sections]
    assert verdicts(report) == verdicts(csv_report)


def verdicts(report: Report) -> list[tuple[str, str, str, float]]:
    judged = report.data.findings.judgements
    return [(j.metric, a.arm, a.verdict, a.delta) for j in judged for a in j.arms]


def test_a_dataframes_page_keeps_its_rows_beside_it(results_csv: Path, tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    frame = load_table(results_csv).to_frame()
    before = frame_folders()
    page = write_report(frame, tmp_path / "page.html")
    assert frame_folders() == before
    assert load_table(page.with_suffix(".csv")).to_csv() == load_table(results_csv).to_csv()
