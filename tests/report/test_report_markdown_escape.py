"""Issue 36: the Markdown twin is inert (HTML escaped, no live `javascript:` link), as the
HTML page is; a results CSV with such arm names renders both safely."""

from __future__ import annotations

from pathlib import Path

import pytest

from archaudit.report.markdown import text

ARMS = ("<script>alert(1)</script>", "[x](javascript:alert(1))")


def test_text_escapes_html_and_breaks_links() -> None:
    assert text("<b>a & b</b>") == "&lt;b&gt;a &amp; b&lt;/b&gt;"
    assert text("[x](javascript:alert(1))") == "\\[x\\](javascript\\:alert(1))"
    assert text("JavaScript :x") == "JavaScript \\:x"
    assert text("plain words, 1.5 ± 0.2") == "plain words, 1.5 ± 0.2"


def test_hostile_arm_names_stay_inert_in_the_twin(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from archaudit.report import write_report

    rows = ["arm,scale,seed,metric,value"]
    for n, arm in enumerate(("baseline", *ARMS)):
        rows += [f'"{arm}",xs,{seed},val_loss,{3 + seed / 10 + n / 50}' for seed in range(3)]
    (tmp_path / "results.csv").write_text("\n".join(rows) + "\n")
    write_report(tmp_path / "results.csv", tmp_path / "r.html", markdown=tmp_path / "r.md")
    markdown = (tmp_path / "r.md").read_text()
    assert "&lt;script&gt;" in markdown
    assert "<script" not in markdown.lower() and "](javascript:" not in markdown.lower()
    assert "<script" not in (tmp_path / "r.html").read_text().lower()
