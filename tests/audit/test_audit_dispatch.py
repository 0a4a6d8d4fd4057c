"""The order a round's runs go to the executor: longest first (audit/execute/dispatch.py)."""

from __future__ import annotations

import pytest

from archaudit.audit.execute.demo import DEMO_FILE
from archaudit.audit.execute.dispatch import longest_first
from archaudit.audit.grid.plan import make_plan, run_flops
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.grid.store import RunStatus
from archaudit.audit.setup.spec import load_audit


def statuses(tmp_path, speeds=None):
    """The demo plan's runs as statuses; `speeds`: (arm, scale, seed) → tokens/s of a DONE."""
    plan = make_plan(load_audit(DEMO_FILE, runs_dir=tmp_path))
    out = []
    for run in plan.runs:
        speed = (speeds or {}).get((run.arm, run.scale, run.seed))
        record = None
        if speed is not None:
            tokens = run.recipe.steps * run.recipe.batch_tokens
            train = {"tokens": tokens, "tokens_per_s": speed}
            record = RunRecord.of_run(run, status="ok", metrics={}, train=train)
        state = "planned" if record is None else "done"
        out.append(RunStatus(plan.run_dir(run), run, state, 0, record, None, None))
    return out


def test_before_any_run_the_largest_models_go_first_in_plan_order(tmp_path):
    runs = statuses(tmp_path)
    order = longest_first([s.path for s in runs], runs)
    flops = {s.path: run_flops(s.spec) for s in runs}
    assert [flops[p] for p in order] == sorted(flops.values(), reverse=True)
    assert len({flops[p] for p in order}) > 1  # the demo's two scales differ
    same = [s.path for s in runs if flops[s.path] == flops[order[0]]]
    assert [p for p in order if p in same] == same  # ties keep the plan's order


@pytest.mark.parametrize("post_ln_speed", [1000.0, 9000.0])
def test_the_measured_slower_group_goes_first(tmp_path, post_ln_speed):
    baseline_speed = 4000.0
    speeds = {("baseline", "d48", 0): baseline_speed, ("post_ln", "d48", 0): post_ln_speed}
    runs = statuses(tmp_path, speeds)
    path = {(s.spec.arm, s.spec.scale, s.spec.seed): s.path for s in runs}
    todo = [path[("baseline", "d48", 1)], path[("post_ln", "d48", 0)]]
    slower_first = todo[::-1] if post_ln_speed < baseline_speed else todo
    assert longest_first(todo, runs) == slower_first


def test_an_arm_measured_slow_at_one_scale_goes_first_at_the_other(tmp_path):
    speeds = {("baseline", "d64", 0): 4000.0, ("post_ln", "d64", 0): 1000.0}
    runs = statuses(tmp_path, speeds)
    path = {(s.spec.arm, s.spec.scale, s.spec.seed): s.path for s in runs}
    todo = [path[("baseline", "d48", 0)], path[("post_ln", "d48", 0)]]
    assert longest_first(todo, runs) == todo[::-1]
