"""items.csv from a run's evals.json: each item's correctness, gold bits per byte and choice
margin, empty where the task (a cloze task) or an evals.json from before them has none."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.grid.store import ITEMS_FILE, export, materialize, run_status
from archaudit.audit.setup.spec import load_audit
from archaudit.rundir import EVALS
from archaudit.stats import load_items


def _item(item_id: str, correct: bool, **measures: float | None) -> dict:
    return {"id": item_id, "correct": correct, "correct_norm": None, **measures}


EVALS_JSON = {
    "tasks": {
        "arc": {
            "metric": "acc",
            "items": [
                _item("0", True, gold_bpb=0.75, margin=1.25),
                _item("1", False, gold_bpb=1.5, margin=-0.5),
            ],
        },
        "lambada": {"metric": "acc", "items": [_item("0", True, gold_bpb=0.625, margin=None)]},
        "old": {"metric": "acc", "items": [_item("0", False)]},  # an evals.json before bpb
    }
}


def test_items_csv_holds_bpb_and_margin(write_audit, tmp_path: Path):
    plan = make_plan(load_audit(write_audit(), runs_dir=tmp_path / "runs"))
    run_dir = materialize(plan)[0]
    (run_dir / EVALS).write_text(json.dumps(EVALS_JSON))
    status = run_status(run_dir)
    record = RunRecord.of_run(status.spec, status="ok", metrics={"val_loss": 3.5})
    status = dataclasses.replace(status, state="done", result=record)
    export(plan.audit_dir, [status])
    rows = list(csv.DictReader((plan.audit_dir / ITEMS_FILE).open()))
    assert [(r["task"], r["item"], r["correct"], r["bpb"], r["margin"]) for r in rows] == [
        ("arc", "0", "1", "0.75", "1.25"),
        ("arc", "1", "0", "1.5", "-0.5"),
        ("lambada", "0", "1", "0.625", ""),
        ("old", "0", "0", "", ""),
    ]
    table = load_items(plan.audit_dir)
    assert [r.margin for r in table.results][:2] == [1.25, -0.5]
