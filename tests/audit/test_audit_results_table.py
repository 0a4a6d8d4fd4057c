"""Issue 32: the tool reads an audit's results from its DONE records (`store.read_results`);
results.csv is their export for users, written from that same table, and `load_table` reads it
back row for row. The runs finish with made-up numbers: what is tested is where they go."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.results.findings import VERDICTS_ONLY, findings
from archaudit.audit.setup.spec import load_audit
from archaudit.stats import Table, load_table
from archaudit.stats.records.errors import EmptyTableError, TableError


def finished_audit(write_audit, tmp_path: Path, huge: float | None = None) -> Path:
    """A tuned arm, an arm with duties, a diverged run and a metric one seed did not measure;
    `huge`: the baseline's seed-0 loss (a value no results.csv may hold)."""
    arms = [{"arm": "qk_norm", "recipe": {"lr": 0.01}, "tuned": True}, "value_residual"]
    audit = write_audit(arms=arms, seeds={"noise_floor": 3, "arms": 2})
    plan = make_plan(load_audit(audit, runs_dir=tmp_path / "runs"))
    store.materialize(plan)
    for run in plan.runs:
        loss = 3.0 + 0.01 * run.seed + (0.003 if run.mods != "baseline" else 0.0)
        if huge is not None and run.mods == "baseline" and run.seed == 0:
            loss = huge
        diverged = run.mods == "value_residual" and run.seed == 1
        record = RunRecord.of_run(
            run,
            status="diverged" if diverged else "ok",
            diverged_step=7 if diverged else None,
            metrics={"val_loss": loss, "acc": None if run.seed == 1 else 0.5},
        )
        store.write_done(plan.run_dir(run), record)
    return plan.audit_dir


def _rows(table: Table) -> list[dict]:
    return [row.cells() | {"value": repr(row.value)} for row in table.rows]  # NaN == NaN


def test_the_record_table_is_what_results_csv_holds_row_for_row(write_audit, tmp_path: Path):
    audit_dir = finished_audit(write_audit, tmp_path)
    with pytest.raises(EmptyTableError, match="no run of the audit has finished"):
        store.read_results(tmp_path / "none", [])
    records = store.read_results(audit_dir)
    assert records.tuned("qk_norm") and not records.tuned("baseline")
    assert records.owes("value_residual", "downstream")
    assert not records.owes("qk_norm", "downstream")
    assert records.runs("value_residual", "xs")[1].step == 7
    assert any(math.isnan(row.value) for row in records.rows)
    assert {row.origin for row in records.rows} == {
        str(d / store.DONE) for d in store.audit_run_dirs(audit_dir)
    }
    assert store.export(audit_dir) == records
    results = audit_dir / store.RESULTS_FILE
    assert results.read_text() == records.to_csv()  # the export is the same table, as CSV
    assert _rows(load_table(results)) == _rows(records)


def test_judging_an_audit_reads_its_records_not_results_csv(write_audit, tmp_path: Path):
    """A results.csv deleted or garbled after the runs finished changes no verdict: no module
    outside `stats` parses an audit's tuned, duties or family back out of its CSV strings."""
    audit_dir = finished_audit(write_audit, tmp_path)
    store.export(audit_dir)
    verdicts = _verdict_rows(audit_dir)
    (audit_dir / "results.parquet").unlink(missing_ok=True)
    for garbled in ("arm,tuned\nqk_norm,maybe\n", None):
        results = audit_dir / store.RESULTS_FILE
        results.unlink()
        if garbled is not None:
            results.write_text(garbled)
        assert _verdict_rows(audit_dir) == verdicts


def _verdict_rows(audit_dir: Path) -> str:
    return json.dumps([row.to_dict() for row in findings(audit_dir, asked=VERDICTS_ONLY).rows()])


def test_a_bad_record_value_is_named_by_its_done_file(write_audit, tmp_path: Path):
    audit_dir = finished_audit(write_audit, tmp_path, huge=1e200)
    with pytest.raises(TableError, match=r"baseline/xs/seed-0/DONE: value 1e\+200 is beyond"):
        store.read_results(audit_dir)
