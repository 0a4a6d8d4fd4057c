"""docs/guides/replication-claim.md runs: its measure registers, its claim loads and plans, one of
its runs trains and is measured, and the claim is judged from stored values (issue 56 item 6: a
guide per extension point, with an example the suite runs)."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest

from archaudit.audit.execute.runner import run_one
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.store import materialize
from archaudit.audit.launcher.launch import RunOptions
from archaudit.audit.replicating.replicate import claim_spec, load_claims
from archaudit.audit.replicating.replicate_levels import (
    MEASURES,
    measure_claim,
    read_sample,
    sample_path,
    write_sample,
)
from archaudit.audit.replicating.replicate_run import plan_claims
from archaudit.audit.replicating.replication import Outcome, judge_claim
from archaudit.errors import ConfigError

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "replication-claim.md"


def _block(language: str) -> str:
    (block,) = re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(), flags=re.S)
    return block


@pytest.fixture
def guide_claim(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The guide's measure registered for one test (the registry is restored after), and its
    claim file written."""
    monkeypatch.setattr(MEASURES, "_items", dict(MEASURES._items))
    exec(compile(_block("python"), str(GUIDE), "exec"), {"__name__": "guide_example"})
    assert "bits_per_token" in MEASURES
    path = tmp_path / "example_claim.toml"
    path.write_text(_block("toml"))
    return path


def test_the_guide_claim_plans_trains_and_is_judged(guide_claim: Path, tmp_path: Path):
    (claim,) = load_claims(guide_claim)
    spec = claim_spec(claim, tmp_path / "runs")  # refused if it reused the pilots' seeds
    plan = make_plan(spec)
    assert sorted(r.seed for r in plan.runs) == [3, 4, 5]
    (planned,) = plan_claims([claim], tmp_path / "runs", probe=False)
    assert planned.runs_left == 3 and "bits_per_token to measure (seeds)" in planned.power[0]
    assert judge_claim(claim, spec).outcome is Outcome.NOT_RUN
    first = materialize(plan)[0]
    assert run_one(first, RunOptions(threads=1)) == "done"
    sample = measure_claim(claim, spec)
    assert sample.unit == "seed" and len(sample.values) == 1
    assert 0 < sample.values[0] < sample.reference == pytest.approx(math.log2(256))
    one = judge_claim(claim, spec)
    assert one.outcome is Outcome.NOT_ESTABLISHED  # one seed: no spread, nothing declared
    three = dataclasses.replace(sample, values=(6.1, 6.3, 6.2))
    write_sample(three, sample_path(spec.audit_dir, claim.name))
    assert read_sample(sample_path(spec.audit_dir, claim.name)) == three
    assert judge_claim(claim, spec).outcome is Outcome.REPRODUCED


def test_the_guide_claim_refuses_its_pilots_seeds(guide_claim: Path, tmp_path: Path):
    guide_claim.write_text(guide_claim.read_text().replace("offset = 3", "offset = 1"))
    (claim,) = load_claims(guide_claim)
    with pytest.raises(ConfigError, match="pilots'"):
        claim_spec(claim, tmp_path / "runs")
