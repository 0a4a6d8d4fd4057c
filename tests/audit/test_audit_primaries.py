"""Issue 41, item 2: a fixed design judged on several primary metrics splits α over them (as the
loop does), says so, and labels any other metric exploratory: the same α and verdicts in `run`'s
judgements (and the trackers'), `stats` and the report."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.results.findings import VERDICTS_ONLY, findings
from archaudit.audit.results.verdicts import audit_primaries
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import app, register_commands
from archaudit.report.data import gather

PRIMARY = ["val_loss", "downstream_avg"]


def fake_audit(write_audit):
    """Baseline 3 seeds, two arms 2 seeds, three metrics (train_loss is not primary)."""
    path = write_audit(
        arms=["qk_norm", "post_ln"], seeds={"noise_floor": 3, "arms": 2, "primary": PRIMARY}
    )
    plan = make_plan(load_audit(path))
    store.materialize(plan)
    for run in plan.runs:
        rng = np.random.default_rng([sum(map(ord, run.arm)), run.seed])
        shift = 0.05 if run.arm == "post_ln" else 0.0
        metrics = {
            "val_loss": 3.0 + shift + 0.01 * float(rng.normal()),
            "downstream_avg": 0.5 - shift + 0.01 * float(rng.normal()),
            "train_loss": 3.1 + 0.01 * float(rng.normal()),
        }
        store.write_done(plan.run_dir(run), RunRecord.of_run(run, status="ok", metrics=metrics))
    store.refresh_export(plan.audit_dir)
    return plan.audit_dir


def test_alpha_is_split_over_the_primaries_everywhere(write_audit):
    audit = fake_audit(write_audit)
    assert audit_primaries(audit) == tuple(PRIMARY)
    judged = findings(audit, ("val_loss", "downstream_avg", "train_loss"), asked=VERDICTS_ONLY)
    judged = judged.judgements
    alphas = {j.metric: j.alpha for j in judged}
    assert alphas == {"val_loss": 0.025, "downstream_avg": 0.025, "train_loss": 0.05}
    notes = {j.metric: " ".join(j.notes) for j in judged}
    assert "split over the audit's 2 primary metrics" in notes["val_loss"]
    assert "exploratory: train_loss" in notes["train_loss"]
    register_commands()
    for j in judged:
        argv = ["stats", str(audit), "--metric", j.metric, "--json"]
        document = json.loads(CliRunner().invoke(app, argv).stdout)
        assert document["alpha"] == j.alpha
        printed = {a["arm"]: (a["verdict"], a["p_adj"]) for a in document["arms"]}
        assert printed == {a.arm: (a.verdict, a.p_adj) for a in j.arms}
    report = {j.metric: j for j in gather(audit, metrics=("val_loss", "downstream_avg")).verdicts}
    for j in judged[:2]:
        assert report[j.metric].alpha == j.alpha
        assert [a.verdict for a in report[j.metric].arms] == [a.verdict for a in j.arms]
