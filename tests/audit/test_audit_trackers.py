"""Trackers: optional mirrors of the metrics rows; a missing extra is a clear error."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from archaudit.audit.launch import RunOptions
from archaudit.audit.plan import RunSpec, make_plan
from archaudit.audit.runner import run_one
from archaudit.audit.spec import load_audit
from archaudit.audit.store import materialize
from archaudit.audit.trackers import TRACKERS, check_tracker
from archaudit.errors import ConfigError

ROWS: list[dict[str, Any]] = []


@TRACKERS.register("test-memory")
class MemoryTracker:
    def __init__(self, run_dir: Path, run: RunSpec) -> None:
        self.closed = False

    def log(self, row: dict[str, Any]) -> None:
        ROWS.append(row)

    def close(self) -> None:
        ROWS.append({"closed": True})


def test_a_tracker_sees_every_metrics_row_and_is_closed(write_audit):
    ROWS.clear()
    run_dir = materialize(make_plan(load_audit(write_audit(arms=[]))))[0]
    assert run_one(run_dir, RunOptions(tracker="test-memory")) == "done"
    steps = [row["step"] for row in ROWS[:-1]]
    assert steps == list(range(1, 13)) and ROWS[-1] == {"closed": True}
    assert any("val_loss" in row for row in ROWS)


def test_an_unknown_tracker_is_named():
    with pytest.raises(ConfigError, match=r"unknown tracker 'tensorbord'.*tensorboard"):
        check_tracker("tensorbord")


@pytest.mark.parametrize("name", ["tensorboard", "wandb"])
def test_a_missing_extra_says_how_to_install_it(name: str):
    if importlib.util.find_spec(name) is not None:
        pytest.skip(f"{name} is installed")
    with pytest.raises(ConfigError, match=r"archaudit\[tracking\]"):
        check_tracker(name)


@pytest.mark.parametrize("name", ["tensorboard", "wandb"])
def test_real_trackers_write_their_files(write_audit, monkeypatch, name: str):
    pytest.importorskip(name, reason="the tracking extra is not installed")
    monkeypatch.setenv("WANDB_MODE", "offline")
    run_dir = materialize(make_plan(load_audit(write_audit(arms=[]))))[0]
    assert run_one(run_dir, RunOptions(tracker=name)) == "done"
    assert any((run_dir / name).iterdir())
