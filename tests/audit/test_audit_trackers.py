"""Trackers: optional mirrors of the metrics rows, the evals and the verdicts; a missing extra
is a clear error. The W&B (offline) and MLflow (file store) tests read back what they wrote."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from archaudit.audit.execute.coordinator import _track_verdicts
from archaudit.audit.execute.runner import run_one, train_tracked
from archaudit.audit.execute.trackers import TRACKERS, TrackedRun, check_tracker
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.grid.store import materialize, write_done
from archaudit.audit.launcher.launch import RunOptions
from archaudit.audit.setup.spec import load_audit
from archaudit.config import ModelConfig, Recipe
from archaudit.errors import ConfigError

EVENTS: list[tuple[str, Any]] = []


@TRACKERS.register("test-memory")
class MemoryTracker:
    def __init__(self, run: TrackedRun) -> None:
        EVENTS.append(("open", run))

    def log(self, row: dict[str, Any]) -> None:
        EVENTS.append(("log", row))

    def summary(self, values: Mapping[str, float | None]) -> None:
        EVENTS.append(("summary", dict(values)))

    def table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        EVENTS.append(("table", list(rows)))

    def close(self) -> None:
        EVENTS.append(("close", None))


def _events(kind: str) -> list[Any]:
    return [value for k, value in EVENTS if k == kind]


def test_a_tracker_sees_every_row_then_the_evals_and_is_closed(write_audit, probe_suite):
    EVENTS.clear()
    audit = write_audit(arms=[], eval={"suite": str(probe_suite)})
    run_dir = materialize(make_plan(load_audit(audit)))[0]
    assert run_one(run_dir, RunOptions(tracker="test-memory")) == "done"
    (opened,) = _events("open")
    assert (opened.group, opened.tags["seed"]) == ("baseline/xs", "0")
    assert [row["step"] for row in _events("log")] == list(range(1, 13))
    (summary,) = _events("summary")
    assert {"val_loss", "downstream_avg", "induction/acc"} <= set(summary)
    done = json.loads((run_dir / "DONE").read_text())
    assert summary == done["metrics"]
    assert EVENTS[-1] == ("close", None)


def test_the_audits_verdicts_go_to_the_tracker(write_audit):
    EVENTS.clear()
    # two seeds: a single-seed arm is at most a candidate under the default (robust) test
    plan = make_plan(load_audit(write_audit(seeds={"noise_floor": 3, "arms": 2})))
    materialize(plan)
    losses = {("baseline", k): 3.0 + 0.01 * k for k in range(3)}
    losses |= {("qk_norm", 0): 2.895, ("qk_norm", 1): 2.905}
    for run in plan.runs:  # what the runs leave before run_audit ends with the verdicts
        metrics = {"val_loss": losses[(run.arm, run.seed)]}
        write_done(plan.run_dir(run), RunRecord.of_run(run, status="ok", metrics=metrics))
    _track_verdicts("test-memory", plan)
    (table,) = _events("table")
    assert [(r["metric"], r["arm"], r["scale"]) for r in table] == [("val_loss", "qk_norm", "xs")]
    assert table[0]["verdict"] == "improver" and table[0]["delta"] == pytest.approx(0.11)
    (summary,) = _events("summary")
    assert summary["delta/val_loss/qk_norm/xs"] == table[0]["delta"]
    assert _events("open")[0].name == "tiny/verdicts"


def test_an_unknown_tracker_is_named():
    with pytest.raises(ConfigError, match=r"unknown tracker 'tensorbord'.*tensorboard"):
        check_tracker("tensorbord")


@pytest.mark.parametrize("name", ["tensorboard", "wandb", "mlflow"])
def test_a_missing_extra_says_how_to_install_it(name: str):
    if importlib.util.find_spec(name) is not None:
        pytest.skip(f"{name} is installed")
    with pytest.raises(ConfigError, match=rf"archaudit\[{name}\]"):
        check_tracker(name)


TINY_MODEL = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=32)
TINY_RECIPE = Recipe(
    steps=6, batch_tokens=512, corpus_chars=50_000, eval_every=3, eval_batches=2,
    checkpoint_every=6, device="cpu",
)  # fmt: skip


def _train(out: Path, tracker: str, probe_suite: Path) -> dict[str, float | None]:
    _, metrics = train_tracked(
        TINY_MODEL, TINY_RECIPE, out, seed=3, arm="qk_norm", scale="xs",
        tracker=tracker, suite=str(probe_suite),
    )  # fmt: skip
    assert {"val_loss", "downstream_avg", "induction/acc"} <= set(metrics)
    return metrics


def _wandb_records(path: Path) -> Iterator[Any]:
    """The records of an offline run's `.wandb` file: a LevelDB-style log (7-byte file header,
    32 KiB blocks of checksum, length, kind, data) of protobuf `Record`s. wandb 0.31 ships no
    Python reader for it (its core is in Go); the format is its `store` package's."""
    from wandb.proto import wandb_internal_pb2

    data, block, pos, pending = path.read_bytes(), 32768, 7, b""
    while pos + 7 <= len(data):
        room = block - pos % block
        if room < 7:  # a block's tail too short for a header is padding
            pos += room
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def test_train_tracker_wandb_offline_holds_the_eval_metrics(tmp_path, monkeypatch, probe_suite):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    metrics = _train(tmp_path / "run", "wandb", probe_suite)
    wandb.teardown()  # the service writes the run file: wait for it to finish
    (log,) = (tmp_path / "run" / "wandb").glob("offline-run-*/run-*.wandb")
    records = list(_wandb_records(log))
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert (run.run_group, list(run.tags)) == ("qk_norm/xs", ["arm:qk_norm", "scale:xs", "seed:3"])
    summary = {
        item.key or "/".join(item.nested_key): json.loads(item.value_json)
        for r in records
        if r.WhichOneof("record_type") == "summary"
        for item in r.summary.update
    }
    for key in ("val_loss", "downstream_avg", "induction/acc"):
        assert summary[key] == pytest.approx(metrics[key]), sorted(summary)


def test_train_tracker_mlflow_file_store_holds_the_eval_metrics(tmp_path, monkeypatch, probe_suite):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    metrics = _train(tmp_path / "run", "mlflow", probe_suite)
    client = MlflowClient(tracking_uri=(tmp_path / "run" / "mlruns").as_uri())
    experiment = client.get_experiment_by_name("archaudit-train")
    (run,) = client.search_runs([experiment.experiment_id])
    for key in ("val_loss", "downstream_avg", "induction/acc"):
        assert run.data.metrics[key] == pytest.approx(metrics[key])
    assert (run.data.tags["arm"], run.data.tags["scale"], run.data.tags["seed"]) == (
        "qk_norm", "xs", "3",
    )  # fmt: skip
    assert [m.step for m in client.get_metric_history(run.info.run_id, "loss")] == list(range(1, 7))


def test_mlflow_gets_the_config_as_flat_params_and_each_value_once(stand_in_mlflow, tmp_path):
    """Issue 36: runs can be filtered by `params."model.attention.score"`, and the summary
    does not log val_loss a second time at the last step (a stand-in client records calls)."""
    calls = stand_in_mlflow
    config = {"arm": "qk_norm", "mods": ["qk_norm"], "model": {"attention": {"score": "softpick"},
              "n_layers": 2, "extra": {}}, "seed": 3}  # fmt: skip
    tracker = TRACKERS.get("mlflow")(TrackedRun("p", "r", "qk_norm", "xs", 3, tmp_path, config))
    tracker.log({"step": 6, "loss": 2.4, "val_loss": 2.5})
    tracker.summary({"val_loss": 2.5, "downstream_avg": 0.3, "missing": None})
    (params,) = [c[1] for c in calls if c[0] == "params"]
    assert params == {"arm": "qk_norm", "mods": '["qk_norm"]', "model.attention.score": "softpick",
                      "model.extra": "{}", "model.n_layers": "2", "scale": "xs",
                      "seed": "3"}  # fmt: skip
    metrics = [c[1:] for c in calls if c[0] == "metric"]
    assert metrics == [("loss", 2.4, 6), ("val_loss", 2.5, 6), ("downstream_avg", 0.3, 6)]


def test_every_judgeable_verdict_is_tracked_and_the_rest_noted(write_audit):
    """Issue 44: downstream_avg that cannot be judged (every baseline seed equal: no noise
    floor) no longer keeps val_loss's verdicts from the tracker; it is a note beside them."""
    EVENTS.clear()
    plan = make_plan(load_audit(write_audit(seeds={"noise_floor": 3, "arms": 2})))
    materialize(plan)
    losses = {("baseline", k): 3.0 + 0.01 * k for k in range(3)}
    losses |= {("qk_norm", 0): 2.895, ("qk_norm", 1): 2.905}
    for run in plan.runs:
        metrics = {"val_loss": losses[(run.arm, run.seed)], "downstream_avg": 0.25}
        write_done(plan.run_dir(run), RunRecord.of_run(run, status="ok", metrics=metrics))
    _track_verdicts("test-memory", plan)
    verdicts, notes = _events("table")
    assert [(r["metric"], r["arm"], r["verdict"]) for r in verdicts] == [
        ("val_loss", "qk_norm", "improver")
    ]
    (note,) = notes
    assert note["analysis"] == "verdicts" and note["where"] == "downstream_avg:xs"
    assert "baseline" in note["reason"]


def test_a_train_run_has_its_arm_as_a_param_in_mlflow(stand_in_mlflow, tmp_path):
    """Issue 44: `train --tracker mlflow` logged the arm only as a tag (an audit run's config
    holds it, a train run's config does not): now arm, scale and seed are params everywhere."""
    calls = stand_in_mlflow
    config = {"model": {"n_layers": 2}, "recipe": {"lr": 1e-3}, "seed": 3}
    TRACKERS.get("mlflow")(TrackedRun("archaudit-train", "out", "qk_norm", "xs", 3, tmp_path,
                                      config))  # fmt: skip
    (params,) = [c[1] for c in calls if c[0] == "params"]
    assert (params["arm"], params["scale"], params["seed"]) == ("qk_norm", "xs", "3")


def test_wandb_writes_where_wandb_dir_says(monkeypatch, tmp_path):
    """Issue 44: W&B ignored WANDB_DIR (the run's folder always won)."""
    import types

    seen: dict[str, Any] = {}
    wandb = types.ModuleType("wandb")
    wandb.init = lambda **kwargs: seen.update(kwargs) or types.SimpleNamespace()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", wandb)
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: object())
    run = TrackedRun("p", "r", "qk_norm", "xs", 3, tmp_path / "run", {"seed": 3})
    monkeypatch.delenv("WANDB_DIR", raising=False)
    TRACKERS.get("wandb")(run)
    assert seen["dir"] == str(tmp_path / "run") and seen["config"]["arm"] == "qk_norm"
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "elsewhere"))
    TRACKERS.get("wandb")(run)
    assert seen["dir"] == str(tmp_path / "elsewhere")
