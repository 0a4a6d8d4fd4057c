"""Helpers for the report tests: results CSVs and audit directories built without training."""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Iterable, Mapping
from pathlib import Path

from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.setup.spec import load_audit

FAMILIES = ("attention-output", "norm", "residual", "mlp", "position")


def write_results(
    path: Path,
    effects: Mapping[str, float],
    *,
    scales: Iterable[str] = ("d48", "d64"),
    seeds: int = 2,
    baseline_seeds: int = 3,
    sigma: float = 0.01,
    seed: int = 0,
) -> Path:
    """A long-format results CSV: val_loss (lower is better) and downstream_avg per run. An
    arm's effect is its true val_loss change; downstream moves the other way, twice as far."""
    rng = random.Random(seed)
    rows = []
    for scale in scales:
        for i, arm in enumerate(["baseline", *effects]):
            effect = effects.get(arm, 0.0)
            family = "baseline" if arm == "baseline" else FAMILIES[i % len(FAMILIES)]
            for k in range(baseline_seeds if arm == "baseline" else seeds):
                loss = 3.0 + effect + rng.gauss(0.0, sigma)
                acc = 0.5 - 2 * effect + rng.gauss(0.0, sigma)
                rows.append((arm, scale, k, "val_loss", repr(loss), family))
                rows.append((arm, scale, k, "downstream_avg", repr(acc), family))
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("arm", "scale", "seed", "metric", "value", "family"))
        writer.writerows(rows)
    return path


AUDIT_TOML = """
name = "fake"
arms = {arms}
[seeds]
noise_floor = 3
arms = 2
[eval]
suite = ""
[recipe]
steps = 20
batch_tokens = 512
corpus_chars = 100000
[scales.d32]
d_model = 32
n_layers = 1
n_heads = 2
context_length = 32
[scales.d48]
d_model = 48
n_layers = 2
n_heads = 2
context_length = 32
"""

ENV = {
    "archaudit": "0.1.0",
    "python": "3.11.7",
    "torch": "2.13.0",
    "device": "cpu",
    "source_hash": "0123abcd",
    "git_commit": None,
}


def fake_audit(
    root: Path,
    effects: Mapping[str, float],
    *,
    finished: float = 1.0,
    diverge: tuple[str, str, int, int] | None = None,
    seed: int = 0,
    audit_toml: str = AUDIT_TOML,
) -> Path:
    """An audit directory as `archaudit run` leaves it (plan, run.json, metrics.jsonl, env.json,
    DONE, results.csv), with made-up numbers instead of training. `finished` is the share of
    runs that have a DONE file; `diverge` = (arm, scale, seed, step) makes one run diverge;
    `audit_toml` is the audit file, with `{arms}` where its arms go."""
    audit_file = root / "fake.toml"
    audit_file.write_text(audit_toml.format(arms=json.dumps(list(effects))))
    plan = make_plan(load_audit(audit_file, runs_dir=root / "runs"))
    store.materialize(plan)
    rng = random.Random(seed)
    for i, run in enumerate(plan.runs):
        run_dir = plan.run_dir(run)
        effect = effects.get(run.arm, 0.0)
        stop = diverge[3] if diverge and diverge[:3] == (run.arm, run.scale, run.seed) else None
        rows = []
        for step in range(1, (stop or 21)):
            loss = 3.0 + effect + 2.0 / step + rng.gauss(0.0, 0.01)
            row = {"step": step, "loss": loss, "grad_norm": 1.0 / step + 0.1, "lr": 1e-3}
            if step % 5 == 0:  # the trainer's eval_every
                row["val_loss"] = loss + 0.05
            rows.append(row)
        (run_dir / store.METRICS).write_text("".join(json.dumps(r) + "\n" for r in rows))
        (run_dir / "env.json").write_text(json.dumps(ENV))
        if i >= finished * len(plan.runs):
            continue
        metrics = {
            "val_loss": None if stop else 3.0 + effect + rng.gauss(0.0, 0.01),
            "downstream_avg": None if stop else 0.5 - 2 * effect + rng.gauss(0.0, 0.01),
        }
        status = "diverged" if stop else "ok"
        record = RunRecord.of_run(run, status=status, diverged_step=stop, metrics=metrics)
        store.write_done(run_dir, record)
    store.refresh_export(plan.audit_dir)
    return plan.audit_dir
