"""The DONE record is a typed `RunRecord`: it round-trips through JSON, and every reader gets
either a whole record or one error naming the file and the bad field."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.setup.spec import load_audit
from archaudit.errors import DataError


@pytest.fixture
def run_dir(write_audit, tmp_path: Path) -> Path:
    plan = make_plan(load_audit(write_audit(arms=[]), runs_dir=tmp_path / "runs"))
    return store.materialize(plan)[0]


def test_done_round_trips_and_status_reads_it_as_a_record(run_dir: Path):
    spec = store.read_spec(run_dir)
    record = RunRecord.of_run(spec, status="diverged", diverged_step=7, metrics={"val_loss": None})
    store.write_done(run_dir, record)
    assert store.read_record(run_dir) == record
    assert RunRecord.from_json(json.loads(json.dumps(record.to_json())), "x") == record
    status = store.run_status(run_dir)
    assert status.state == "diverged" and status.result == record
    rows = list(store.result_rows(status))
    assert [(r.metric, math.isnan(r.value), r.step) for r in rows] == [("val_loss", True, 7)]


def test_done_holds_the_duties_so_the_export_reads_the_record_alone(run_dir: Path):
    """Issue 32: DONE keeps the arm's duties; the results rows come from the record, not
    run.json (a DONE from before keeps working: no duties read as none)."""
    spec = dataclasses.replace(store.read_spec(run_dir), duties=("downstream",))
    record = RunRecord.of_run(spec, status="ok", metrics={"val_loss": 3.0})
    assert record.duties == ("downstream",) and record.to_json()["duties"] == ["downstream"]
    store.write_done(run_dir, record)
    status = dataclasses.replace(store.run_status(run_dir), spec=None)  # run.json not consulted
    assert {row.duties for row in store.result_rows(status)} == {("downstream",)}
    old = {k: v for k, v in record.to_json().items() if k != "duties"}
    assert RunRecord.from_json(old, "x").duties == ()


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"status": "finished"}, "status 'finished'"),
        ({"metrics": {"val_loss": "3.1"}}, "metric 'val_loss'"),
        ({"seed": True}, "seed = True"),
        ({"attempts": None}, "attempts = None"),
        ({"diverged_step": 1.5}, "diverged_step = 1.5"),
    ],
)
def test_a_garbled_done_is_one_error_naming_the_field(run_dir: Path, change, named):
    spec = store.read_spec(run_dir)
    data = RunRecord.of_run(spec, status="ok", metrics={"val_loss": 3.0}).to_json() | change
    (run_dir / store.DONE).write_text(json.dumps(data))
    with pytest.raises(DataError, match=rf"DONE.*{named}"):
        store.read_record(run_dir)
    status = store.run_status(run_dir)  # status reports it instead of crashing on it
    assert status.state == "failed" and named in (status.error or "")


def test_a_done_without_a_field_names_it(run_dir: Path):
    spec = store.read_spec(run_dir)
    data = RunRecord.of_run(spec, status="ok", metrics={}).to_json()
    del data["host"]
    (run_dir / store.DONE).write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"DONE is not a result record \(host = None"):
        store.read_record(run_dir)


def test_a_garbled_duties_list_in_run_json_is_refused(run_dir: Path):
    data = json.loads((run_dir / store.RUN_FILE).read_text()) | {"duties": "downstream"}
    (run_dir / store.RUN_FILE).write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"run.json is not a run spec .*duties = 'downstream'"):
        store.read_spec(run_dir)
