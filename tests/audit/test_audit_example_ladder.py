"""docs/examples/ladder-tiny.toml: an example audit with three scales and a [target], so that
`stats predict` can be tried on an audit without designing a ladder (issue 57 finding 6)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
from report_helpers import fake_audit

from archaudit.audit.grid.plan import make_plan
from archaudit.audit.results.ladder import audit_ladder
from archaudit.audit.setup.spec import load_audit

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "ladder-tiny.toml"


def test_the_ladder_example_parses_plans_and_is_a_ladder(tmp_path):
    spec = load_audit(EXAMPLE, runs_dir=tmp_path)
    plan = make_plan(spec)
    scales = {run.scale for run in plan.runs}
    assert len(scales) >= 3 and spec.target is not None
    assert len(plan.runs) == len(scales) * (1 + len(spec.arms)) * 3
    ladder = audit_ladder(spec)  # the scales on one line, the target beyond the largest
    assert [s.name for s in ladder.scales] == ["d32", "d48", "d64"]
    assert ladder.target.params > max(s.params for s in ladder.scales)


def test_the_example_names_the_commands_to_try():
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "archaudit stats predict runs/ladder-tiny" in text


def test_stats_predict_answers_on_the_examples_grid(tmp_path, monkeypatch, capsys):
    """The example's grid with made-up results (no training): `stats predict` on it prints
    each arm's Δ at the target, 1M."""
    from archaudit.cli import main, stats_cmd  # noqa: F401  (registers `stats`)

    text = re.sub(r"^arms = \[.*\]$", "arms = {arms}", EXAMPLE.read_text(), count=1, flags=re.M)
    audit = fake_audit(tmp_path, {"qk_norm": -0.01, "post_ln": 0.05}, audit_toml=text)
    argv = ["archaudit", "stats", "predict", str(audit), "--metric", "val_loss"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_:
        main()
    out = capsys.readouterr().out
    assert (exit_.value.code or 0) == 0, out
    assert "1M" in out and "post_ln" in out and "qk_norm" in out
