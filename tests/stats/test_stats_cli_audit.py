"""`archaudit stats` on an audit directory: a run in progress, and a sequential audit.

Defects: during a run `stats` said "has no results.csv" until `archaudit status` exported it,
then printed an empty table (m = 0) with no word about the unfinished runs; and on a sequential
audit it re-judged the seeds with a fixed-design test, calling post_ln nominal while `run` and
the report, which read the loop's summary, called it a regressor.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
from report_helpers import fake_audit

from archaudit.audit.grid import store

EFFECTS = {"qk_norm": 0.0, "post_ln": 0.1, "geglu": 0.0}


def test_stats_during_a_run_refreshes_the_export_and_counts_unfinished_runs(cli, tmp_path):
    audit = fake_audit(tmp_path, EFFECTS, finished=0.5)
    (audit / store.RESULTS_FILE).unlink()  # the coordinator has not exported yet
    code, out, err = cli(f"stats {audit} --metric val_loss --scale d32")
    assert code == 0, err
    assert (audit / store.RESULTS_FILE).is_file()
    assert "runs unfinished" in out and "verdicts cover the" in out
    total = len(store.audit_run_dirs(audit))
    assert f"of {total} runs unfinished" in out


def test_stats_before_any_run_finished_says_so(cli, tmp_path):
    audit = fake_audit(tmp_path, EFFECTS, finished=0.0)
    code, _, err = cli(f"stats {audit} --metric val_loss --scale d32")
    assert code == 2
    assert "no run of the audit has finished yet" in err and "Traceback" not in err


def sequential_audit(root: Path) -> Path:
    """A finished fake audit whose loop's summary calls post_ln a regressor at p = 1e-4."""
    audit = fake_audit(root, EFFECTS)
    arms = [
        {"arm": arm, "seeds": 3, "delta": -effect, "t": -12.2 if effect else 0.3,
         "p": 1e-4 if effect else 0.8, "verdict": "regressor" if effect else "within-noise",
         "stopped": "settled" if effect else "futile"}
        for arm, effect in EFFECTS.items()
    ]  # fmt: skip
    family = {"baseline": "baseline", "scale": "d48", "metric": "val_loss", "sigma": 0.01,
              "sigma_dof": 8, "baseline_seeds": 3, "arms": arms}  # fmt: skip
    rule = {"alpha": 0.05, "max_seeds": 3, "baseline_seeds": 3}
    summary = {"rounds": 2, "runs": 15, "stop": "settled", "rule": rule, "families": [family]}
    folder = audit / store.SEQUENTIAL_DIR
    folder.mkdir()
    (folder / store.SEQUENTIAL_SUMMARY).write_text(json.dumps(summary))
    return audit


@pytest.fixture
def looped(tmp_path) -> Path:
    return sequential_audit(tmp_path)


def test_stats_on_a_sequential_audit_prints_the_loops_verdicts(cli, looped):
    code, out, err = cli(f"stats {looped} --metric val_loss --scale d48")
    assert code == 0, err
    assert "sequential" in out and "regressor" in out and "settled" in out
    assert "p_adj" not in out  # no fixed-design table
    assert "--fixed-design" in out


def test_the_fixed_design_reanalysis_only_under_a_flag_and_labelled_descriptive(cli, looped):
    code, out, err = cli(f"stats {looped} --metric val_loss --scale d48 --fixed-design")
    assert code == 0, err
    loop, fixed = out.split("descriptive", 1)
    assert "regressor" in loop and "p_adj" in fixed


def test_sequential_json_is_the_loops_judgement(cli, looped):
    """The same record as a fixed judgement's JSON, with the loop under "sequential"."""
    _, out, _ = cli(f"stats {looped} --metric val_loss --scale d48 --json")
    document = json.loads(out)
    assert document["sequential"]["stop"] == "settled" and document["scale"] == "d48"
    post_ln = next(arm for arm in document["arms"] if arm["arm"] == "post_ln")
    assert post_ln["verdict"] == "regressor" and post_ln["test"] == "sequential"
    assert post_ln["stopped"] == "settled" and post_ln["p"] == 1e-4


def test_a_metric_the_loop_did_not_judge_gets_the_fixed_design_with_a_note(cli, looped):
    code, out, _ = cli(f"stats {looped} --metric downstream_avg --scale d48")
    assert code == 0 and "p_adj" in out
    assert "not judged by the sequential loop" in out
