"""`archaudit stats runs/audit > file` keeps every number and word whole at any width (issue 57
finding 4): piped at 80 columns, rich folded the verdict table into "-43." / "9" and "7.81e-0" /
"8", cut "gated_attn_headwise" to "gated_attn_headwis" and dropped the n column. Here the piped
text at 40, 80 and 120 columns is parsed back and must give the JSON's numbers."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
from report_helpers import fake_audit

from archaudit.cli.base.tables import ITEM_GAP, fit, wrap_words
from archaudit.glossary import POINTER, used_in

EFFECTS = {"gated_attn_headwise": 0.01, "qk_norm": -0.002, "post_ln": 0.366, "softpick": -0.003}
NUMBERS = {"Δ": "delta", "t": "statistic", "p": "p", "p_adj": "p_adj"}
WORDS = {"verdict": "verdict", "grade": "grade"}


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_audit(tmp_path_factory.mktemp("pipe"), EFFECTS)


def sections(out: str) -> dict[tuple[str, str], list[str]]:
    """The printed lines under each "<metric> at scale <scale>:" title."""
    found: dict[tuple[str, str], list[str]] = {}
    current: list[str] = []
    for line in out.splitlines():
        title = re.match(r"(\S+) at scale (\S+):", line)
        if title:
            current = found.setdefault((title[1], title[2]), [])
        current.append(line)
    return found


def arm_cells(lines: list[str], arm: str) -> dict[str, str]:
    """One arm's cells, from a table (a header line, then the arm's row) or from its block (the
    arm's name alone on a line, then indented "column: value" items)."""
    if arm in lines:  # a block
        start = lines.index(arm) + 1
        end = next((k for k in range(start, len(lines)) if not lines[k].startswith("  ")), None)
        items = " ".join(lines[start:end]).split(ITEM_GAP)
        pairs = (item.strip().partition(": ") for item in items if item.strip())
        return {label: value for label, _, value in pairs}
    header = next(line.split() for line in lines if line.split()[:1] == ["arm"])
    row = next(line.split() for line in lines if line.split()[:1] == [arm])
    assert len(row) == len(header), (header, row)
    return dict(zip(header, row, strict=True))


def close(text: str, value: float) -> bool:
    """`text` is `value` printed to 3 significant digits (or more)."""
    return math.isclose(float(text), value, rel_tol=6e-3, abs_tol=1e-12)


@pytest.mark.parametrize("columns", [40, 80, 120])
def test_piped_stats_parse_back_to_the_json(cli, audit, columns):
    code, out, err = cli(f"stats {audit}", columns=columns)
    assert code == 0, err
    judgements = json.loads(cli(f"stats {audit} --json")[1])
    printed = sections(out)
    assert len(judgements) == 4 and len(printed) == 4, out
    for judgement in judgements:
        lines = printed[judgement["metric"], judgement["scale"]]
        for arm in judgement["arms"]:
            cells = arm_cells(lines, arm["arm"])
            assert int(cells["n"]) == arm["n_seeds"]
            for column, key in NUMBERS.items():
                assert close(cells[column], arm[key]), (column, cells, arm[key], out)
            for column, key in WORDS.items():
                assert cells[column] == arm[key], (column, cells, out)
    for line in out.splitlines():  # wider only where one word is wider than the console
        assert len(line) <= columns or " " not in line.strip(), line


def test_a_table_too_wide_for_the_console_becomes_blocks_with_every_column():
    columns = ("arm", "family", "verdict", "z")
    cells = [["gated_attn_headwise", "attention-logits", "nominal-improver", "-0.0596"]]
    layout = fit(columns, cells, 30, optional=("family",))
    assert layout.stacked and layout.kept == (0, 1, 2, 3) and layout.dropped == ()


def test_prose_breaks_at_spaces_only():
    text = "Δ 0.366 and p_adj 0.000394 beside gated_attn_headwise, nominal-improver"
    for width in range(4, 40):
        lines = wrap_words(text, width)
        assert " ".join(lines).split() == text.split(), (width, lines)


def test_stats_ends_with_the_pointer_to_the_terms_it_used(cli, audit):
    """Issue 57 finding 6: "calibrated level α′", "noise panel", "hetero:6", "grade B" stood in
    the console without a definition; each has its glossary entry, and the last line says where."""
    code, out, _ = cli(f"stats {audit}", columns=80)
    assert code == 0
    assert out.splitlines()[-1] == POINTER
    used = {t.anchor for t in used_in([out])}
    assert {"calibrated-level", "noise-panel", "grade"} <= used
    assert used & {"noise-models", "profile"}  # the panel's worst model is named and defined
