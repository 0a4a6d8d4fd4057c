"""Must-show 3: each protocol duty is decided in one place and travels with the results.

The modification registry decides an arm's duties (`FAMILY_DUTIES` plus what an entry
declares). The plan copies them into every run.json, the store writes them into the `duties`
column of results.csv, and the statistics read that column, never a family's name. The runs
here finish with made-up losses: what is tested is where the duties go, not the numbers.
"""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import app, stats_cmd  # noqa: F401  (registers the stats commands)
from archaudit.mods import list_modifications, resolve_arm
from archaudit.mods.registry import FAMILY_DUTIES
from archaudit.stats import judge, load_table
from archaudit.stats.records.table import DUTIES, DUTY_SEPARATOR

SRC = Path(__file__).resolve().parents[2] / "src" / "archaudit"
SINGLE_SOURCE = {
    "downstream": "archaudit/mods/registry.py: FAMILY_DUTIES['attention-output'] + duties=",
    "cross_scale": "archaudit/mods/registry.py: FAMILY_DUTIES['residual', 'norm'] + duties=",
}
"""Where each duty is decided; everything downstream of it reads `duties`."""
READERS = {
    "downstream": (
        "archaudit/stats/judging/judgement.py (R6 notes), archaudit/audit/grid/plan.py (R6 warning)"
    ),
    "cross_scale": "archaudit/audit/grid/plan.py (R7 warning)",
}


def finished_audit(write_audit, tmp_path: Path, arms: list[str]) -> Path:
    """An audit of `arms` whose runs all finished (DONE, results.csv), with made-up losses."""
    audit = write_audit(arms=arms, seeds={"noise_floor": 3, "arms": 2})
    plan = make_plan(load_audit(audit, runs_dir=tmp_path / "runs"))
    store.materialize(plan)
    for run in plan.runs:
        loss = 3.0 + 0.01 * run.seed + (0.003 if run.mods != "baseline" else 0.0)
        record = RunRecord.of_run(run, status="ok", metrics={"val_loss": loss})
        store.write_done(plan.run_dir(run), record)
    store.refresh_export(plan.audit_dir)
    return plan.audit_dir


def test_value_residuals_verdict_carries_the_r6_note(write_audit, tmp_path: Path):
    """value_residual is a residual-family entry that declares the downstream duty."""
    audit_dir = finished_audit(write_audit, tmp_path, ["value_residual", "geglu"])
    with (audit_dir / store.RESULTS_FILE).open() as f:
        duties = {row["arm"]: row["duties"] for row in csv.DictReader(f)}
    assert duties == {"baseline": "", "geglu": "", "value_residual": "downstream;cross_scale"}
    r6 = [note for note in judge(audit_dir, "val_loss").notes if note.startswith("R6")]
    assert len(r6) == 1 and r6[0].endswith(": value_residual"), r6
    shown = CliRunner().invoke(app, ["stats", str(audit_dir), "--metric", "val_loss", "--json"])
    assert shown.exit_code == 0, shown.output
    assert any(n.startswith("R6") for n in json.loads(shown.stdout)["notes"]), shown.stdout


@pytest.mark.parametrize("duty", DUTIES)
def test_each_duty_travels_from_the_registry_to_the_results_table(
    duty: str, write_audit, tmp_path: Path
):
    """For every duty: an entry the registry says owes it, and one that does not, end up with
    exactly that in run.json and in the results table stats reads."""
    assert duty in SINGLE_SOURCE and duty in READERS
    mods = list_modifications()
    owing = next(m.name for m in mods if duty in m.protocol_duties and m.family != "moe")
    free = next(m.name for m in mods if not m.protocol_duties and m.family == "mlp")
    audit_dir = finished_audit(write_audit, tmp_path, [owing, free])
    for arm in (owing, free):
        expected = resolve_arm(arm).duties
        run = json.loads((audit_dir / arm / "xs" / "seed-0" / store.RUN_FILE).read_text())
        assert tuple(run["duties"]) == expected
        assert load_table(audit_dir).owes(arm, duty) == (duty in expected)
    assert load_table(audit_dir).owes(owing, duty) and not load_table(audit_dir).owes(free, duty)


def test_the_registry_is_the_only_module_that_maps_a_family_to_a_duty():
    """No module but the registry compares a family with one that owes a duty, or spells
    "attention-output" at all (the catalogue only declares its entries' families)."""
    owing_families = set(FAMILY_DUTIES)
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative == "mods/registry.py" or relative.startswith("mods/catalogue/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            compared = isinstance(node, ast.Compare)
            for leaf in ast.walk(node) if compared else [node]:
                if not isinstance(leaf, ast.Constant) or id(leaf) in docstrings:
                    continue
                if leaf.value in owing_families and (compared or leaf.value == "attention-output"):
                    offenders.append(f"{relative}:{leaf.lineno}: {leaf.value!r}")
    assert not offenders, "duties decided outside mods/registry.py:\n" + "\n".join(offenders)


def test_an_unknown_duty_in_a_results_table_names_the_right_one(tmp_path: Path):
    path = tmp_path / "results.csv"
    path.write_text(
        "arm,scale,seed,metric,value,duties\n"
        f"baseline,s,0,val_loss,3.0,\na,s,0,val_loss,3.1,downstream{DUTY_SEPARATOR}crossscale\n"
    )
    with pytest.raises(Exception, match=r"results.csv:3.*'crossscale'.*did you mean 'cross_scale'"):
        load_table(path)
