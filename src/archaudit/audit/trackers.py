"""Trackers mirror a run's metrics rows to TensorBoard or Weights & Biases (`tracking` extra).

A tracker is a registered factory `(run_dir, run) -> Tracker`; the runner hands `Tracker.log` to
the trainer as a metrics hook and closes it when the run ends. Trackers are never required: the
run directory holds every number they show.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from archaudit.audit.plan import RunSpec
from archaudit.errors import ConfigError
from archaudit.registry import Registry


class Tracker(Protocol):
    def log(self, row: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


TrackerFactory = Callable[[Path, RunSpec], Tracker]
TRACKERS: Registry[TrackerFactory] = Registry("tracker")


def check_tracker(name: str) -> None:
    """Fail before any run starts when the tracker is unknown or its package is missing."""
    package = getattr(TRACKERS.get(name), "package", None)
    if package and importlib.util.find_spec(package) is None:
        raise _missing(name)


def open_tracker(name: str, run_dir: Path, run: RunSpec) -> Tracker:
    return TRACKERS.get(name)(run_dir, run)


def _missing(name: str) -> ConfigError:
    return ConfigError(
        f"the {name} tracker needs the tracking extra: pip install 'archaudit[tracking]'"
    )


def _scalars(row: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if k != "step" and isinstance(v, int | float)}


@TRACKERS.register("tensorboard")
class TensorBoardTracker:
    """Event files in `<run_dir>/tensorboard/`: `tensorboard --logdir runs/<audit>`."""

    package = "tensorboard"

    def __init__(self, run_dir: Path, run: RunSpec) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise _missing("tensorboard") from None
        self._writer = SummaryWriter(log_dir=str(run_dir / "tensorboard"))

    def log(self, row: dict[str, Any]) -> None:
        for key, value in _scalars(row).items():
            self._writer.add_scalar(key, value, global_step=row["step"])

    def close(self) -> None:
        self._writer.close()


@TRACKERS.register("wandb")
class WandbTracker:
    """One W&B run per audit run, grouped by arm; offline unless WANDB_MODE says otherwise."""

    package = "wandb"

    def __init__(self, run_dir: Path, run: RunSpec) -> None:
        try:
            import wandb
        except ImportError:
            raise _missing("wandb") from None
        self._run = wandb.init(
            project=run.audit,
            group=run.arm,
            name=run.path,
            dir=str(run_dir),
            config=run.to_json(),
            mode=os.environ.get("WANDB_MODE", "offline"),
            reinit=True,
        )

    def log(self, row: dict[str, Any]) -> None:
        self._run.log(_scalars(row), step=row["step"])

    def close(self) -> None:
        self._run.finish()
