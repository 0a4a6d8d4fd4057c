"""Headlines that carry their caveats (issue 46, item 2): on a fixture audit at one scale, each
verdict's limits (a grade below A, R6 for an arm judged by a loss that owes a downstream
evaluation, R7 for an arm at one scale that owes a second, a single seed's candidate) are said
in the same words by the console's `stats`, its JSON, the report's answer bullets and detail
table, the HTML page and the Markdown twin."""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from archaudit.audit.grid.plan import make_plan
from archaudit.audit.results.findings import VERDICTS_ONLY, findings
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import app, stats_cmd  # noqa: F401  (registers `stats`)
from archaudit.glossary import unlinked
from archaudit.report.blocks import Bullets, Grid
from archaudit.report.build import build_report
from archaudit.report.sections import ARM_COLUMNS
from archaudit.stats.judging.grading import (
    CANDIDATE_CAVEAT,
    CAVEAT_SEPARATOR,
    R6_CAVEAT,
    R7_CAVEAT,
    SCALES,
)

sys.path.insert(0, str(Path(__file__).parent))
from report_helpers import AUDIT_TOML, fake_audit

HEAD, _, REST = AUDIT_TOML.partition("[scales.d32]")
ONE_SCALE = HEAD + "[scales.d48]" + REST.partition("[scales.d48]")[2]
"""The helper's audit at its larger scale only."""
EFFECTS = {"qk_norm": -0.2, "softpick": 0.0, "geglu": 0.3}
"""qk_norm (owes a second scale, R7) a clear improver; softpick (owes a downstream evaluation,
R6) within noise; geglu a clear regressor whose second seed is left unfinished (a candidate)."""
UNFINISHED = 1
"""The plan's last run (geglu's second seed) has no DONE file."""


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("caveats")
    audit_file = root / "fake.toml"
    audit_file.write_text(ONE_SCALE.format(arms=json.dumps(list(EFFECTS))))
    runs = len(make_plan(load_audit(audit_file, runs_dir=root / "runs")).runs)
    return fake_audit(root, EFFECTS, audit_toml=ONE_SCALE, finished=1 - UNFINISHED / runs)


@pytest.fixture(scope="module")
def judged(audit: Path) -> dict[tuple[str, str], tuple[str, ...]]:
    """Each (metric, arm)'s caveats as the record holds them."""
    found = findings(audit, asked=VERDICTS_ONLY)
    assert found.judgements, found.absent
    return {(j.metric, a.arm): a.caveats for j in found.judgements for a in j.arms}


def test_the_record_names_each_limit(judged):
    loss_r6 = R6_CAVEAT.format(metric="val_loss")
    assert all(any(SCALES in c for c in caveats) for caveats in judged.values())  # one scale
    assert R7_CAVEAT in judged[("val_loss", "qk_norm")]
    assert R7_CAVEAT in judged[("downstream_avg", "qk_norm")]
    assert loss_r6 in judged[("val_loss", "softpick")]
    assert loss_r6 not in judged[("downstream_avg", "softpick")]  # judged downstream: no R6
    assert R7_CAVEAT not in judged[("val_loss", "softpick")]  # softpick owes no second scale
    assert any(CANDIDATE_CAVEAT in caveats for caveats in judged.values())


def _said(text: str) -> str:
    """Text as a wrapping console shows it, compared word by word."""
    return " ".join(text.split())


def test_the_console_and_the_json_say_the_same_words(audit, judged):
    for metric in ("val_loss", "downstream_avg"):
        command = ["stats", "verdicts", str(audit), "--metric", metric, "--scale", "d48"]
        printed = CliRunner().invoke(app, command)
        assert printed.exit_code == 0, printed.output
        document = CliRunner().invoke(app, [*command, "--json"])
        assert document.exit_code == 0, document.output
        arms = json.loads(document.output)["arms"]
        assert arms
        for arm in arms:
            caveats = judged[(metric, arm["arm"])]
            assert tuple(arm["caveats"]) == caveats
            line = f"limits of {arm['arm']}: {CAVEAT_SEPARATOR.join(caveats)}"
            assert _said(line) in _said(printed.output)


def test_the_report_and_its_twin_say_the_same_words(audit, judged):
    report = build_report(audit)
    sections = {s.key: s for s in report.sections}
    (bullets,) = [b for b in sections["answer"].blocks if isinstance(b, Bullets)]
    grids = [b for b in sections["arms"].blocks if isinstance(b, Grid)]
    markdown, _ = report.markdown("figures")
    page = unlinked(report.html())  # the text, without the links to the Terms section
    assert all("threshold: the level p_adj must fall below" in g.caption for g in grids)
    limits = ARM_COLUMNS.index("limits")
    rows = {(g.caption.split(" at ")[0], row[0]): row[limits] for g in grids for row in g.rows}
    for (metric, arm), caveats in judged.items():
        (line,) = [item for item in bullets.items if item.startswith(f"{arm}: ")]
        assert all(text in line for text in caveats), (arm, line)
        assert rows[(metric, arm)] == CAVEAT_SEPARATOR.join(caveats)
        assert line in markdown and html.escape(line) in page
        assert f"| {rows[(metric, arm)]} |" in markdown
        assert html.escape(rows[(metric, arm)]) in page
