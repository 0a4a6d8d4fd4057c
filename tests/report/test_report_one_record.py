"""One verdict record (issue 32, must-show 1): a fixed and a sequential audit, built from fixture
runs (no training), say the same Δ, interval, threshold, MDE and verdict for every arm in
`archaudit stats --json`, `Judgement.to_frame()`, the report's data and its Markdown twin.

Defect: `downstream_avg` meant two things. Each run averaged the tasks it scored itself; the
sequential loop, the terminal and `stats` judged that, while the report recomputed it over the
audit's informative tasks (qk_norm at d64: Δ −0.0242 in `stats`, +0.0033 in the report, whose
row took its dot from one and its interval from the other). Here every run flags a different
task at chance, so the two meanings differ and any room that judges the other one fails.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from archaudit.audit.execute import sequential
from archaudit.audit.execute.coordinator import AuditOutcome
from archaudit.audit.execute.sequential import SettleOptions, run_until_settled
from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.results.findings import VERDICTS_ONLY, findings
from archaudit.audit.results.loop_summary import judge_with_loop, read_loop_summary
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import app, stats_cmd  # noqa: F401  (registers `stats`)
from archaudit.formatting import num, pvalue, signed
from archaudit.metrics import downstream_average
from archaudit.report.build import build_report
from archaudit.report.sections import ARM_DELTA
from archaudit.stats import JudgeOptions, load_table

sys.path.insert(0, str(Path(__file__).parent))
from report_helpers import AUDIT_TOML

EFFECTS = {"qk_norm": -0.04, "post_ln": 0.08, "geglu": 0.0}
"""Each arm's true change of every task score (val_loss moves the other way, a tenth as far)."""
TASKS = {"arc": 0.45, "hellaswag": 0.35, "piqa": 0.55, "floor": 0.25}
"""Each task's baseline score; `floor` sits at chance in every run (uninformative)."""
METRICS = ("val_loss", "downstream_avg")
SCALES = ("d32", "d48")


def run_metrics(arm: str, scale: str, seed: int) -> dict[str, float | None]:
    """A run's DONE metrics as the runner writes them: per task its score and at-chance flag,
    and the run's own downstream_avg over the tasks it did not flag."""
    rng = random.Random(f"{arm}/{scale}/{seed}")
    effect = EFFECTS.get(arm, 0.0)
    scores, flags = {}, {}
    for task, base in TASKS.items():
        scores[task] = base + (effect if task != "floor" else 0.0) + rng.gauss(0.0, 0.02)
        flags[task] = task == "floor" or rng.random() < 0.35  # some runs flag other tasks
    kept = [t for t in TASKS if not flags[t]] or list(TASKS)
    metrics: dict[str, float | None] = {
        "val_loss": 3.0 - effect / 10 + rng.gauss(0.0, 0.004),
        "downstream_avg": downstream_average(scores, kept),
    }
    for task in TASKS:
        metrics[f"{task}/score"] = scores[task]
        metrics[f"{task}/at_chance"] = float(flags[task])
    return metrics


def fake_run_audit(plan, **_):
    """Bring every run of `plan` to DONE with `run_metrics`, as an executor would."""
    store.materialize(plan)
    for run in plan.runs:
        run_dir = plan.run_dir(run)
        if not (run_dir / store.DONE).exists():
            metrics = run_metrics(run.arm, run.scale, run.seed)
            store.write_done(run_dir, RunRecord.of_run(run, status="ok", metrics=metrics))
    store.refresh_export(plan.audit_dir)
    return AuditOutcome(plan.audit_dir, {"done": len(plan.runs)}, {}, plan.audit_dir)


def audit_plan(root: Path):
    audit_file = root / "fake.toml"
    audit_file.write_text(AUDIT_TOML.format(arms=json.dumps(list(EFFECTS))))
    return make_plan(load_audit(audit_file, runs_dir=root / "runs"))


@pytest.fixture(scope="module")
def audits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    fixed = audit_plan(tmp_path_factory.mktemp("fixed"))
    fake_run_audit(fixed)
    looped = audit_plan(tmp_path_factory.mktemp("sequential"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sequential, "run_audit", fake_run_audit)
        run_until_settled(looped, SettleOptions(max_seeds=3, metrics=METRICS), live=False)
    return {"fixed": fixed.audit_dir, "sequential": looped.audit_dir}


def shown(delta, interval, threshold, mde, verdict) -> tuple[str, ...]:
    """The five numbers as the page prints them (None: not computed)."""
    low, high = interval if interval is not None else (None, None)
    bounds = f"[{signed(low)}, {signed(high)}]" if low is not None and math.isfinite(low) else "—"
    return (signed(delta), bounds, pvalue(threshold), num(mde), verdict)


def json_arms(audit: Path, metric: str, scale: str) -> list[dict]:
    """The arms of `archaudit stats verdicts --json` for one metric and scale."""
    command = ["stats", "verdicts", str(audit), "--metric", metric, "--scale", scale, "--json"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["arms"]


def from_json(audit: Path, metric: str, scale: str) -> dict[str, tuple[str, ...]]:
    return {
        a["arm"]: shown(a["delta"], a["interval"], a["threshold"], a["mde"], a["verdict"])
        for a in json_arms(audit, metric, scale)
    }


def from_frame(audit: Path, metric: str, scale: str) -> dict[str, tuple[str, ...]]:
    found = findings(audit, (metric,), JudgeOptions(scale=scale), asked=VERDICTS_ONLY)
    judgement = found.judgement(metric, scale)
    assert judgement is not None, found.absent
    return {
        row.arm: shown(row.delta, row.interval, row.threshold, row.mde, row.verdict)
        for row in judgement.to_frame().itertuples()
    }


def from_report(report, metric: str, scale: str) -> dict[str, tuple[str, ...]]:
    (v,) = [v for v in report.data.verdicts if (v.metric, v.scale) == (metric, scale)]
    return {a.arm: shown(a.delta, a.interval, a.threshold, a.mde, a.verdict) for a in v.arms}


def seed_dots_of_json(audit: Path, metric: str, scale: str) -> dict[str, list[float]]:
    return {a["arm"]: a["seed_deltas"] for a in json_arms(audit, metric, scale)}


def seed_dots_of_report(report, metric: str, scale: str) -> dict[str, list[float]]:
    """The forest plot's seed dots: each seed's Δ as the report's data holds it."""
    (v,) = [v for v in report.data.verdicts if (v.metric, v.scale) == (metric, scale)]
    return {a.arm: list(a.seed_deltas) for a in v.arms}


def from_markdown(markdown: str, metric: str, scale: str) -> dict[str, tuple[str, ...]]:
    """The rows of the per-arm table for `metric` at `scale` in the Markdown twin."""
    lines = markdown.splitlines()
    title = f"*{metric} at {scale} ("
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    header = next(line for line in lines[start:] if line.startswith("| arm |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    rows = {}
    for line in lines[lines.index(header, start) + 2 :]:
        if not line.startswith("|"):
            break
        # a cell reads as Markdown renders it: the twin escapes [ ] so no cell becomes a link
        cells = (re.sub(r"\\(.)", r"\1", c.strip()) for c in line.strip("|").split("|"))
        cell = dict(zip(columns, cells, strict=True))
        keys = (ARM_DELTA, "interval", "threshold", "MDE", "verdict")
        rows[cell["arm"]] = tuple(cell[k] for k in keys)
    return rows


@pytest.mark.parametrize("design", ["fixed", "sequential"])
def test_every_room_says_the_same_numbers_for_every_arm(audits, design):
    audit = audits[design]
    report = build_report(audit, metrics=list(METRICS))
    markdown, _ = report.markdown("figures")
    looped = read_loop_summary(audit)
    assert (looped is not None) == (design == "sequential")
    for metric in METRICS:
        for scale in SCALES:
            expected = from_json(audit, metric, scale)
            assert set(expected) == set(EFFECTS)
            assert from_frame(audit, metric, scale) == expected, (metric, scale)
            assert from_report(report, metric, scale) == expected, (metric, scale)
            assert from_markdown(markdown, metric, scale) == expected, (metric, scale)
            assert seed_dots_of_report(report, metric, scale) == seed_dots_of_json(
                audit, metric, scale
            ), (metric, scale)


def test_the_loop_judges_the_audits_downstream_avg_not_each_runs(audits):
    """The defect itself: each run's own downstream_avg (its DONE) differs from the audit's,
    and the loop's Δ is the audit's (what the report's fixed-design seeds give)."""
    audit = audits["sequential"]
    table = load_table(audit)
    own = {(r.arm, r.scale, r.seed): r.value for r in table.rows if r.metric == "downstream_avg"}
    loop = read_loop_summary(audit)
    assert loop is not None
    for scale in SCALES:
        options = JudgeOptions(scale=scale)
        judged = judge_with_loop(table, "downstream_avg", options, loop)
        assert judged.sequential is not None
        for arm in judged.arms:
            seeds = [own[(arm.arm, scale, s)] for s in range(arm.n_seeds)]
            base = [own[("baseline", scale, s)] for s in range(judged.baseline_n)]
            run_own = sum(seeds) / len(seeds) - sum(base) / len(base)
            assert arm.delta != pytest.approx(run_own, abs=1e-9)  # the two meanings differ
            # the forest's seed dots centre on Δ (they were the run's own values before)
            assert sum(arm.seed_deltas) / len(arm.seed_deltas) == pytest.approx(arm.delta)
