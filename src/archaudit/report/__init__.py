"""The audit report: one self-contained HTML page (and a Markdown twin) that a reader opens after
an audit. Figures are drawn with matplotlib. Every statistic comes from `archaudit.stats`; the
training curves and routing numbers come from what the runs logged.

    from archaudit.report import write_report
    path = write_report("runs/my_audit")          # runs/my_audit/report.html

Needs the `report` extra (matplotlib): `pip install 'archaudit[report]'`.
"""

from __future__ import annotations

from archaudit.errors import ArchauditError

try:
    import matplotlib  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ArchauditError(
        "the report needs matplotlib, which is not installed: pip install 'archaudit[report]'"
    ) from err

from archaudit.report.build import Report, build_report, write_report

__all__ = ["Report", "build_report", "write_report"]
