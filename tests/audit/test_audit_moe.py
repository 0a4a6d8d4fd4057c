"""An audit with MoE arms at equal active parameters trains, records expert load, dropped
tokens and router entropy per step and per run, and the report shows them."""

from __future__ import annotations

import json

import pytest

from archaudit.audit.execute.coordinator import run_audit
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.setup.spec import load_audit
from archaudit.report.build import build_report
from archaudit.rundir import METRICS
from archaudit.stats import load_table


@pytest.mark.slow  # four runs: ~30 s of CPU
def test_an_moe_audit_trains_and_reports_routing(write_audit):
    path = write_audit(
        arms=["switch_moe", "mixtral_moe"],
        seeds={"noise_floor": 2, "arms": 1},
        recipe={"steps": 8, "match_params": "active"},
    )
    plan = make_plan(load_audit(path))
    assert not [n for n in plan.notes if n.rule == "params"]  # matched on active parameters
    outcome = run_audit(plan, live=False)
    assert outcome.counts == {"done": 4} and not outcome.failed
    switch = next(r for r in plan.runs if r.arm == "switch_moe")
    rows = [json.loads(line) for line in (plan.run_dir(switch) / METRICS).read_text().splitlines()]
    assert len(rows) == 8 and all(
        len(r["moe_load"]) == 1 and len(r["moe_load"][0]) == 8 for r in rows
    )
    table = load_table(plan.audit_dir)
    metrics = {(r.arm, r.metric) for r in table.rows}
    for arm in ("switch_moe", "mixtral_moe"):
        assert {
            (arm, m) for m in ("moe_dropped", "moe_router_entropy", "moe_load_imbalance")
        } <= metrics
    assert ("baseline", "moe_dropped") not in metrics
    params = {(r.arm, r.metric): r.value for r in table.rows if r.metric.endswith("params")}
    assert params[("switch_moe", "params")] > 3 * params[("baseline", "params")]
    assert (
        abs(params[("switch_moe", "active_params")] / params[("baseline", "active_params")] - 1)
        < 0.05
    )
    dropped = [r.value for r in table.rows if r.metric == "moe_dropped"]
    assert {r.arm: r.value for r in table.rows if r.metric == "moe_dropped"}["mixtral_moe"] == 0.0
    assert all(0 <= d < 1 for d in dropped)  # switch drops at capacity 1.25 (may be 0 by chance)
    sections = {s.key: s for s in build_report(plan.audit_dir).sections}
    assert sections["routing"].absent is None
    assert sorted(row[0] for row in sections["routing"].blocks[0].rows) == [
        "mixtral_moe",
        "switch_moe",
    ]
    counts = sections["scope"].blocks[-1]
    assert counts.columns == ("arm", "scale", "total", "active")
    assert {row[0] for row in counts.rows} == {"baseline", "switch_moe", "mixtral_moe"}
