"""The example of docs/guides/analysis.md: an analysis of the judgements, registered as a report
section, computed and drawn from a results CSV."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from report_helpers import write_results

from archaudit.report import build, build_report
from archaudit.report.figures import Figure
from archaudit.report.sections import SECTIONS

GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "analysis.md"
EFFECTS = {"post_ln": 0.2, "qk_norm": -0.002}
"""True val_loss changes: post_ln a clear regressor (20 σ), qk_norm noise."""


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert len(blocks) == 1, "the guide holds one example, the one this file runs"
    path = tmp_path_factory.mktemp("guide") / "detectability_example.py"
    path.write_text(blocks[0])
    spec = importlib.util.spec_from_file_location("detectability_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def registered(example: ModuleType, tmp_path_factory: pytest.TempPathFactory):
    """The report of a two-scale CSV with the example's section registered after the answer."""
    csv = write_results(tmp_path_factory.mktemp("csv") / "results.csv", EFFECTS)
    with pytest.MonkeyPatch.context() as patch:
        sections = (SECTIONS[0], example.detectability_section, *SECTIONS[1:])
        patch.setattr(build, "SECTIONS", sections)
        return csv, build_report(csv, metrics=["val_loss"])


def test_the_guides_analysis_reads_the_judgements(example: ModuleType, registered) -> None:
    _, report = registered
    records = {(v.metric, v.scale): example.detectability(v) for v in report.data.verdicts}
    assert sorted(records) == [("val_loss", "d48"), ("val_loss", "d64")]
    for record in records.values():
        ratio = dict(zip(record.arms, record.ratios, strict=True))
        assert ratio["post_ln"] > 1 > ratio["qk_norm"] >= 0
        assert all(math.isfinite(r) for r in record.ratios)
        assert json.loads(record.to_json())["arms"] == list(record.arms)


def test_the_guides_section_is_drawn_in_the_report(registered) -> None:
    _, report = registered
    keys = [s.key for s in report.sections]
    assert keys[:2] == ["answer", "detectability"]
    section = report.sections[1]
    (row,) = section.blocks
    figures: tuple[Figure, ...] = row.figures
    assert [f.key for f in figures] == ["detectability-val_loss-d48", "detectability-val_loss-d64"]
    assert all(f.svg.lstrip().startswith(("<?xml", "<svg")) for f in figures)
    page = report.html()
    assert "Effects against what the design detects" in page
    assert figures[1].alt == "Each arm's effect over its MDE, val_loss at d64"
    assert "<figcaption>Each arm&#x27;s effect over its " in page  # then MDE, linked to Terms
    assert ", val_loss at d64</figcaption>" in page


def test_the_guides_figure_is_the_same_bytes_from_the_same_results(
    example: ModuleType, registered
) -> None:
    _, report = registered
    drawn = report.sections[1].blocks[0].figures[0]
    record = example.detectability(report.data.verdicts[0])
    again = example.detectability_bars(drawn.key, record, report.data.colours)
    assert again.svg == drawn.svg
