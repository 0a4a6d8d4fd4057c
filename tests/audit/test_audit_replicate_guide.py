"""docs/guides/replication-claim.md runs: its measure registers, its claim loads and plans, and
judged on filled run folders it is reproduced (issue 56 item 6: a guide per extension point)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archaudit.audit import replicate_levels, store
from archaudit.audit.plan import make_plan
from archaudit.audit.record import RunRecord
from archaudit.audit.replicate import check_fresh_seeds, claim_spec, load_claims
from archaudit.audit.replicate_levels import MEASURES, measure_claim
from archaudit.audit.replicate_run import plan_claims
from archaudit.audit.replication import Outcome, judge_claim
from archaudit.errors import ConfigError

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "replication-claim.md"


def _block(language: str) -> str:
    (block,) = re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(), flags=re.S)
    return block


@pytest.fixture
def guide_measure(monkeypatch: pytest.MonkeyPatch):
    """The guide's measure registered for one test (the registry is restored after)."""
    monkeypatch.setattr(MEASURES, "_items", dict(MEASURES._items))
    exec(compile(_block("python"), str(GUIDE), "exec"), {"__name__": "guide_example"})
    assert "val_bits" in replicate_levels.MEASURES


def test_the_guide_claim_loads_plans_and_is_judged(guide_measure, tmp_path: Path):
    path = tmp_path / "example_claim.toml"
    path.write_text(_block("toml"))
    (claim,) = load_claims(path)
    spec = claim_spec(claim, tmp_path / "runs")
    check_fresh_seeds(claim, spec)  # offset 3 past pilot_seeds 0-2
    plan = make_plan(spec)
    assert sorted(r.seed for r in plan.runs) == [3, 4, 5]
    (planned,) = plan_claims([claim], tmp_path / "runs", probe=False)
    assert planned.runs_left == 3 and "val_bits to measure" in planned.power[0]
    assert judge_claim(claim, spec).outcome is Outcome.NOT_RUN
    store.materialize(plan)
    for run, loss in zip(plan.runs, (3.0, 3.1, 2.9), strict=True):  # nats: 4.2–4.5 bits
        record = RunRecord.of_run(run, status="ok", metrics={"val_loss": loss},
                                  train={"tokens": 6000, "tokens_per_s": 1000.0})  # fmt: skip
        store.write_done(plan.run_dir(run), record)
    sample = measure_claim(claim, spec)
    assert sample.unit == "seed" and len(sample.values) == 3
    result = judge_claim(claim, spec)
    assert result.outcome is Outcome.REPRODUCED and result.evidence.estimate < 6.0


def test_the_guide_claim_refuses_its_pilots_seeds(guide_measure, tmp_path: Path):
    path = tmp_path / "example_claim.toml"
    path.write_text(_block("toml").replace("offset = 3", "offset = 1"))
    (claim,) = load_claims(path)
    with pytest.raises(ConfigError, match="pilots'"):
        claim_spec(claim, tmp_path / "runs")
