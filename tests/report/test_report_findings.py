"""One findings record (issue 40, must-show 1): `stats --json`, the report's data, `to_frame()`
and the rows the MLflow tracker logs are the same verdicts and numbers, on an audit with two
baselines and on a sequential audit, because all four read one `Findings`
(`audit.results.findings`).

Defect: three rooms loaded and judged an audit each their own way; on two baselines the
trackers named arms `baseline@b` and left the other baselines' arms out while the report did
not judge them at all."""

from __future__ import annotations

import collections
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from report_helpers import AUDIT_TOML
from test_report_one_record import METRICS, fake_run_audit

from archaudit.audit.execute import sequential
from archaudit.audit.execute.sequential import SettleOptions, run_until_settled
from archaudit.audit.execute.trackers import log_verdicts
from archaudit.audit.grid import store
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.results.findings import VERDICTS_ONLY, Analysis, findings
from archaudit.audit.setup.spec import load_audit
from archaudit.cli import app, stats_cmd  # noqa: F401  (registers `stats`)
from archaudit.report.data import gather

ARMS = ("qk_norm", "post_ln", "geglu")
STORED_STRESS = Path(__file__).parents[1] / "data" / "stress" / "stress-small.json"
TWO_BASELINES = "[baselines.pre]\n[baselines.post]\ndropout = 0.1\n"

Key = tuple[str, str, str, str]
"""(metric, scale, baseline, arm)."""


def two_baseline_audit(root: Path) -> Path:
    """Every arm on two baselines (`<arm>@pre`, `<arm>@post`), DONE records made up."""
    audit_file = root / "two.toml"
    audit_file.write_text(AUDIT_TOML.format(arms=json.dumps(list(ARMS))) + TWO_BASELINES)
    plan = make_plan(load_audit(audit_file, runs_dir=root / "runs"))
    store.materialize(plan)
    for run in plan.runs:
        arm, base = run.arm.split("@")
        shift = {"post_ln": 0.08, "qk_norm": -0.04}.get(arm, 0.0) + (0.02 if base == "post" else 0)
        noise = 0.01 * math.sin(17.0 * run.seed + len(run.arm) + len(run.scale))
        metrics = {"val_loss": 3.0 + shift / 10 + noise / 3, "downstream_avg": 0.5 - shift + noise}
        record = RunRecord.of_run(run, status="ok", metrics=metrics)
        store.write_done(plan.run_dir(run), record)
    store.refresh_export(plan.audit_dir)
    return plan.audit_dir


def sequential_audit(root: Path) -> Path:
    audit_file = root / "looped.toml"
    audit_file.write_text(AUDIT_TOML.format(arms=json.dumps(list(ARMS))))
    plan = make_plan(load_audit(audit_file, runs_dir=root / "runs"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sequential, "run_audit", fake_run_audit)
        run_until_settled(plan, SettleOptions(max_seeds=3, metrics=METRICS), live=False)
    return plan.audit_dir


@pytest.fixture(scope="module")
def audits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {
        "two baselines": two_baseline_audit(tmp_path_factory.mktemp("two")),
        "sequential": sequential_audit(tmp_path_factory.mktemp("looped")),
    }


def same(value: Any) -> Any:
    """A number as every room must agree on it: missing (None, NaN, <NA>) as None."""
    if value is None or value is getattr(sys.modules.get("pandas"), "NA", object()):
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value if isinstance(value, str) else float(value)


def numbers(delta, low, high, threshold, mde, verdict) -> tuple:  # type: ignore[no-untyped-def]
    return (same(delta), same(low), same(high), same(threshold), same(mde), str(verdict))


def from_json(audit: Path) -> dict[Key, tuple]:
    result = CliRunner().invoke(app, ["stats", "verdicts", str(audit), "--json"])
    assert result.exit_code == 0, result.output
    judged = json.loads(result.stdout)
    return {
        (j["metric"], j["scale"], j["baseline"], a["arm"]): numbers(
            a["delta"], *a["interval"], a["threshold"], a["mde"], a["verdict"]
        )
        for j in (judged if isinstance(judged, list) else [judged])
        for a in j["arms"]
    }


def from_report(audit: Path) -> dict[Key, tuple]:
    return {
        (j.metric, j.scale, j.baseline, a.arm): numbers(
            a.delta, *a.interval, a.threshold, a.mde, a.verdict
        )
        for j in gather(audit).verdicts
        for a in j.arms
    }


def from_frame(audit: Path) -> dict[Key, tuple]:
    frame = findings(audit, asked=VERDICTS_ONLY).to_frame()
    return {
        (r.metric, r.scale, r.baseline, r.arm): numbers(
            r.delta, r.interval_low, r.interval_high, r.threshold, r.mde, r.verdict
        )
        for r in frame.itertuples()
    }


def logged(calls: list[tuple]) -> dict[str, Any]:
    """What the stand-in MLflow client received (the `stand_in_mlflow` fixture): each file it
    logged by name, and its tags under "tags"."""
    files: dict[str, Any] = {c[1]: c[2] for c in calls if c[0] == "dict"}
    return files | {"tags": {c[1]: c[2] for c in calls if c[0] == "tag"}}


def from_mlflow(audit: Path, calls: list[tuple]) -> dict[Key, tuple]:
    """The verdicts.json the MLflow tracker logs (a stand-in client records it) and its tags."""
    log_verdicts("mlflow", "audit", audit, findings(audit, asked=VERDICTS_ONLY))
    received = logged(calls)
    rows = received["verdicts.json"]
    for row in rows:
        tag = f"verdict/{row['metric']}/{row['arm']}/{row['scale']}".replace("@", "_")
        assert received["tags"][tag] == row["verdict"]
    fields = ("delta", "interval_low", "interval_high", "threshold", "mde", "verdict")
    return {
        (r["metric"], r["scale"], r["baseline"], r["arm"]): numbers(*(r[f] for f in fields))
        for r in rows
    }


@pytest.mark.parametrize("design", ["two baselines", "sequential"])
def test_stats_the_report_the_frame_and_mlflow_show_one_record(audits, design, stand_in_mlflow):
    audit = audits[design]
    expected = from_json(audit)
    metrics = {key[0] for key in expected}
    assert metrics == set(METRICS)
    if design == "two baselines":  # each baseline judges its own arms, none of the other's
        by_baseline = collections.defaultdict(set)
        for _, _, base, arm in expected:
            by_baseline[base].add(arm)
        assert by_baseline == {
            f"baseline@{b}": {f"{arm}@{b}" for arm in ARMS} for b in ("pre", "post")
        }
    else:
        assert store.read_json(audit / store.SEQUENTIAL_DIR / store.SEQUENTIAL_SUMMARY)
    assert from_report(audit) == expected
    assert from_frame(audit) == expected
    assert from_mlflow(audit, stand_in_mlflow) == expected


def test_the_frame_keeps_its_nullable_dtypes_through_parquet(audits, tmp_path):
    """Issue 44: `to_frame()` had object columns (None for NaN) that Parquet did not round-trip."""
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    found = findings(audits["sequential"], asked=VERDICTS_ONLY)
    for frame in (found.to_frame(), found.judgements[0].to_frame()):
        numeric = frame.select_dtypes(include=["Float64", "Int64", "boolean", "string"])
        assert {"delta", "mde", "threshold", "n_seeds", "verdict"} <= set(numeric.columns)
        assert not any(frame[c].map(lambda v: v is None).any() for c in numeric.columns)
        frame.to_parquet(tmp_path / "f.parquet")
        back = pandas.read_parquet(tmp_path / "f.parquet")
        pandas.testing.assert_frame_equal(frame, back)


def test_a_stored_stress_test_is_one_slice_of_the_record(audits, tmp_path, stand_in_mlflow):
    """Issue 43 item 6: the stability verdicts of `archaudit stress` live in the findings
    (`stability`), and `stats verdicts`, the report and the tracker show those same rows."""
    from archaudit.audit.execute.trackers import track_verdicts
    from archaudit.audit.stability.stress import STRESS_DIR
    from archaudit.audit.stability.stress_result import RESULT_FILE

    audit = tmp_path / "audit"
    shutil.copytree(audits["sequential"], audit)
    (audit / STRESS_DIR).mkdir()
    shutil.copy(STORED_STRESS, audit / STRESS_DIR / RESULT_FILE)
    found = findings(audit)
    rows = found.stability_rows()
    rates, depth = "stability/rates", "stability/depth"
    shown = {(r.metric, r.arm, r.verdict) for r in rows}
    assert {(rates, "post_ln", "more-fragile"), (depth, "post_ln", "more-fragile"),
            (rates, "qk_norm", "within-noise")} <= shown  # fmt: skip
    assert gather(str(audit)).stress == found.stability
    out = CliRunner().invoke(app, ["stats", "verdicts", str(audit)])
    assert out.exit_code == 0, out.output
    assert all(r.line() in " ".join(out.output.split()) for r in rows)
    track_verdicts("mlflow", "audit", audit)
    assert logged(stand_in_mlflow)["stability.json"] == [r.to_dict() for r in rows]


def test_a_loops_judgement_keeps_no_fixed_design_calibration(audits):
    """Issue 40 item 2: a sequential judgement used to keep the fixed design's α′, profile and
    per-seed MDEs beside the loop's verdicts; its level is now the loop's own, with the profile
    its seeds show (issue 41: the loop's level is lowered by it as α′ is)."""
    from archaudit.names import Test
    from archaudit.stats.simulation.profile import Profile
    from archaudit.stats.simulation.sequential import spent_level

    found = findings(audits["sequential"], asked=VERDICTS_ONLY)
    looped = [j for j in found.judgements if j.sequential is not None]
    assert looped
    for j in looped:
        arms = sum(a.test == Test.SEQUENTIAL for a in j.arms)
        assert j.level == spent_level(j.sequential.rule, arms, Profile.from_spec(j.profile))
        assert j.level <= spent_level(j.sequential.rule, arms) and j.mdes == ()
        assert j.mde == j.sequential.design.mde_sigmas * j.sigma


def test_a_plans_warning_is_said_once_in_the_detail_tables(audits):
    """Issue 46: the downstream_avg rows repeated the seeds val_loss asked for; each warning of
    the plan (a seed the loop added, R5–R7) now stands in one row, the first with its arm at its
    scale, and every one of them is said."""
    from archaudit.report.blocks import Grid
    from archaudit.report.sections import ARM_COLUMNS, arm_table

    data = gather(audits["sequential"])
    grids = [b for b in arm_table(data).blocks if isinstance(b, Grid)]
    column = ARM_COLUMNS.index("warnings")
    cells = [row[column] for grid in grids for row in grid.rows]
    planned = {text for notes in data.protocol_notes.values() for _, text in notes}
    seeds = [text for text in planned if text.startswith("seed: ")]
    assert seeds
    for text in seeds:
        assert sum(text in cell for cell in cells) == 1, text


def test_a_folder_with_only_its_stress_test_reports_it(tmp_path):
    """Issue 44 item 3: `stress` may fill an audit folder before `run` does; `report` then shows
    the stability section and says why there are no verdicts yet (it refused the folder)."""
    from archaudit.audit.results.findings import EVERYTHING
    from archaudit.audit.stability.stress import STRESS_DIR
    from archaudit.audit.stability.stress_result import RESULT_FILE
    from archaudit.report.build import build_report

    folder = tmp_path / "runs" / "audit"
    (folder / STRESS_DIR).mkdir(parents=True)
    shutil.copy(STORED_STRESS, folder / STRESS_DIR / RESULT_FILE)
    found = findings(folder, asked=EVERYTHING)
    assert found.stability is not None and not found.judgements
    assert "only its stress test has run" in (found.why(Analysis.VERDICTS) or "")
    sections = {s.key: s for s in build_report(folder).sections}
    assert sections["stability"].absent is None
    out = CliRunner().invoke(app, ["stats", "verdicts", str(folder)])  # no table: one reason
    assert out.exit_code != 0 and "only its stress test has run" in str(out.exception)


def two_primary_audit(root: Path) -> Path:
    """Two baselines and two primary metrics (α split in two): post_ln's and qk_norm's
    downstream effects lie between the split α and α, where a second judging path that skips
    the split declared them (issue 56: `stats transfer` printed `regressor` beside `stats`'s
    `nominal-regressor`)."""
    audit_file = root / "split.toml"
    spec = AUDIT_TOML.format(arms=json.dumps(list(ARMS)))
    primaries = '[seeds]\nprimary = ["val_loss", "downstream_avg"]\n'
    audit_file.write_text(spec.replace("[seeds]\n", primaries) + TWO_BASELINES)
    plan = make_plan(load_audit(audit_file, runs_dir=root / "runs"))
    store.materialize(plan)
    for run in plan.runs:
        arm, base = run.arm.split("@")
        shift = {"post_ln": 0.08, "qk_norm": -0.04, "geglu": 0.02}.get(arm, 0.0)
        shift += 0.02 if base == "post" else 0.0
        noise = 0.01 * math.sin(17.0 * run.seed + len(run.arm) + len(run.scale))
        metrics = {"val_loss": 3.0 + shift / 10 + noise / 3, "downstream_avg": 0.5 - shift + noise}
        store.write_done(plan.run_dir(run), RunRecord.of_run(run, status="ok", metrics=metrics))
    store.refresh_export(plan.audit_dir)
    return plan.audit_dir


def from_transfer(audit: Path) -> dict[Key, str]:
    """`stats transfer --baseline pre --baseline post --json`: each arm's verdict per baseline."""
    args = ["stats", "transfer", str(audit), "--baseline", "pre", "--baseline", "post", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return {
        (t["metric"], t["scale"], f"baseline@{base}", f"{arm['arm']}@{base}"): verdict
        for t in json.loads(result.stdout)
        for arm in t["arms"]
        for base, verdict in arm["verdicts"].items()
    }


@pytest.fixture
def stand_in_wandb(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """A stand-in `wandb` module that records what a run logs (the tests need no wandb)."""
    import types

    calls: list[tuple] = []

    class Table:
        def __init__(self, columns: list, data: list) -> None:
            self.columns, self.data = columns, data

    class Run:
        def __init__(self) -> None:
            self.summary: dict = {}

        def log(self, values: dict, step: int | None = None) -> None:
            calls.extend(("log", key, value) for key, value in values.items())

        def finish(self) -> None:
            calls.append(("finish",))

    module = types.ModuleType("wandb")
    module.Table = Table  # type: ignore[attr-defined]
    module.init = lambda **kwargs: Run()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", module)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    return calls


def from_wandb(audit: Path, calls: list[tuple]) -> dict[Key, tuple]:
    """The verdicts table the W&B tracker logs (a stand-in module records it)."""
    log_verdicts("wandb", "audit", audit, findings(audit, asked=VERDICTS_ONLY))
    (table,) = [value for kind, *rest in calls if kind == "log" for key, value in [rest]
                if key == "verdicts"]  # fmt: skip
    rows = [dict(zip(table.columns, row, strict=True)) for row in table.data]
    fields = ("delta", "interval_low", "interval_high", "threshold", "mde", "verdict")
    return {
        (r["metric"], r["scale"], r["baseline"], r["arm"]): numbers(*(r[f] for f in fields))
        for r in rows
    }


def test_one_verdict_per_family_in_stats_transfer_the_report_and_the_trackers(
    tmp_path, stand_in_mlflow, stand_in_wandb
):
    """Issue 56 must-show 1: on a two-baseline, two-primary-metric audit every (metric,
    baseline, arm) verdict is the same in `stats`, `stats transfer`, the report and the
    trackers (MLflow and W&B, each through its own client)."""
    audit = two_primary_audit(tmp_path)
    expected = from_json(audit)
    verdicts = {key: value[-1] for key, value in expected.items()}
    assert "nominal-regressor" in verdicts.values()  # the cells where the two paths differed
    assert len({(metric, base) for metric, _, base, _ in expected}) == 4  # 2 metrics × 2 baselines
    assert from_transfer(audit) == verdicts
    assert from_report(audit) == expected
    assert from_mlflow(audit, stand_in_mlflow) == expected
    assert from_wandb(audit, stand_in_wandb) == expected
