"""Issue 40, item 7 (must-show 3): every `stats` sub-command runs on an audit folder with no
options: the metric defaults to the audit's primary metrics and the scale to every scale, said in
the header. An analysis the audit's design cannot answer says so in one line (exit 2), never a
usage box or a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.setup.spec import load_audit

AUDIT = """name = "tiny"
arms = ["qk_norm", "post_ln", "qk_norm+post_ln"]
runs_dir = "runs"
[seeds]
noise_floor = 3
arms = 2
primary = ["val_loss", "downstream_avg"]
[eval]
suite = ""
[recipe]
steps = 12
batch_tokens = 512
[scales.xs]
d_model = 32
n_layers = 1
n_heads = 2
context_length = 32
[scales.s]
d_model = 48
n_layers = 2
n_heads = 2
context_length = 32
"""
ANSWERS = {  # exit 0 and a line naming the defaults, or one line saying why it cannot apply
    "": 0, "verdicts": 0, "transfer": 0, "decoupling": 0, "aggregate": 0, "power": 0,
    "snr": 0, "interactions": 0, "scaling": 2, "predict": 2, "items": 2,
}  # fmt: skip
"""scaling: two (N, D) points cannot fit five parameters; predict: no [target] in the file;
items: the fake runs scored no items."""


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    root = tmp_path_factory.mktemp("defaults")
    (root / "audit.toml").write_text(AUDIT)
    plan = make_plan(load_audit(root / "audit.toml"))
    store.materialize(plan)
    for run in plan.runs:
        rng = np.random.default_rng([sum(map(ord, run.arm + run.scale)), run.seed])
        shift = 0.05 if "post_ln" in run.arm else 0.0

        def noise(rng: np.random.Generator = rng) -> float:
            return 0.01 * float(rng.normal())

        metrics = {"val_loss": 3.0 + shift + noise(), "params": 1e4 if run.scale == "xs" else 3e4}
        metrics["tokens"] = 20 * metrics["params"]
        metrics |= {f"t{k}/score": 0.5 - shift + noise() for k in range(3)}
        metrics["downstream_avg"] = float(np.mean([metrics[f"t{k}/score"] for k in range(3)]))
        store.write_done(plan.run_dir(run), RunRecord.of_run(run, status="ok", metrics=metrics))
    store.refresh_export(plan.audit_dir)
    return plan.audit_dir


@pytest.mark.parametrize("command", sorted(ANSWERS))
def test_every_stats_command_runs_on_an_audit_folder_with_its_defaults(audit, cli, command):
    line = f"stats {command} {audit}"
    code, out, err = cli(line)
    assert code == ANSWERS[command], (command, out, err)
    assert "Missing option" not in err and "Traceback" not in err, err
    if code == 2:
        assert err.startswith("error:") and len(err.strip().splitlines()) == 1, err
    elif command not in ("snr", "scaling"):
        assert "defaults from the audit folder" in out or "every scale" in out, out
    code, out, err = cli(line + " --json")
    if code == 0:
        json.loads(out)  # one JSON document, a list when several ran
