"""The report's "At the target scale" section: shown for an audit file with a [target] (the
per-arm table, the ladder plot and the backtest figure), absent with its reason otherwise."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "stats"))
from test_stats_predict_cli import audit_file

from archaudit.report import build_report


def _target(source: Path):
    return {s.key: s for s in build_report(source).sections}["target"]


def test_an_audit_with_a_target_shows_the_prediction(tmp_path):
    section = _target(audit_file(tmp_path))
    assert section.absent is None
    text = " ".join(str(b) for b in section.blocks)
    assert "at target (500,000 parameters" in text and "P(sign holds)" in text
    figures = [b for b in section.blocks if hasattr(b, "svg")]
    assert [f.key for f in figures] == ["target-ladder", "target-backtest"]
    assert all(f.svg.count("<path") > 10 for f in figures)
    assert "backtest of log_linear" in text and "single-scale baseline" in text
    assert "backtest of slope_rule" in text  # the printed intervals' own line, as `stats` shows
    # issue 42 item 5: the method in words, with the coverage its intervals earned
    assert "prediction: the slope rule: each arm's Δ̂ at the largest" in text
    assert re.search(r"its 80% intervals held \d+% of \d+ backtest predictions", text)


def test_without_a_target_the_section_says_why(tmp_path):
    section = _target(audit_file(tmp_path, target=""))
    assert section.absent == "the audit file names no [target] scale"
    csv = tmp_path / "runs" / "lad" / "results.csv"
    assert _target(csv).absent == "the audit file names no [target] scale"
