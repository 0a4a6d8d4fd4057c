"""Trackers mirror a run to TensorBoard, Weights & Biases or MLflow (one extra each:
`tensorboard`, `wandb`, `mlflow`; `tracking` installs all three).

A tracker is a registered factory `(TrackedRun) -> Tracker`. It receives every metrics row while
the run trains (`log`, called by the trainer's callback from `tracker_callbacks`), then the
run's final numbers — validation loss and every eval metric — as its summary (`summary`); the
audit's verdicts go to one more tracker run per audit (`track_verdicts`): every verdict that
could be judged (`Findings.rows()`), and a note for each family that could not. W&B groups runs
by (arm, scale) with the seed as a tag, so its group view shows the spread across seeds. The
arm, scale and seed are params (config) as well as tags everywhere. Trackers are never required:
the run directory holds every number they show.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from archaudit.audit.grid.plan import RunSpec
from archaudit.errors import ArchauditError, ConfigError
from archaudit.registry import Registry

if TYPE_CHECKING:
    from archaudit.audit.results.findings import Findings
    from archaudit.train.callbacks import Callback


@dataclass(frozen=True)
class TrackedRun:
    """What a tracker names, groups and files a run by."""

    project: str
    name: str
    arm: str
    scale: str
    seed: int | None
    folder: Path
    """Where file-based stores go (W&B's offline files, tensorboard/, mlruns/)."""
    config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def group(self) -> str:
        return f"{self.arm}/{self.scale}"

    @property
    def tags(self) -> dict[str, str]:
        seed = {} if self.seed is None else {"seed": str(self.seed)}
        return {"arm": self.arm, "scale": self.scale, **seed}

    @property
    def params(self) -> dict[str, Any]:
        """The run's config with its arm, scale and seed: an audit run's config holds them, a
        `train` run's does not, and every tracker filters runs by them."""
        return {**self.tags, **self.config}


def tracked_run(run_dir: Path, run: RunSpec) -> TrackedRun:
    """An audit run as its tracker sees it (file stores in the audit directory)."""
    audit_dir = run_dir.parents[2]  # <audit>/<arm>/<scale>/seed-<k>
    return TrackedRun(run.audit, run.path, run.arm, run.scale, run.seed, audit_dir, run.to_json())


class Tracker(Protocol):
    def log(self, row: dict[str, Any]) -> None: ...

    def summary(self, values: Mapping[str, float | None]) -> None: ...

    def table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None: ...

    def close(self) -> None: ...


TrackerFactory = Callable[[TrackedRun], Tracker]
TRACKERS: Registry[TrackerFactory] = Registry("tracker")


def check_tracker(name: str) -> None:
    """Fail before any run starts when the tracker is unknown or its package is missing."""
    package = getattr(TRACKERS.get(name), "package", None)
    if package and importlib.util.find_spec(package) is None:
        raise _missing(name)


def open_tracker(name: str, run: TrackedRun) -> Tracker:
    return TRACKERS.get(name)(run)


class LazyTracker:
    """Opens the tracker at its first use, not before: W&B and MLflow write their files into
    the run's folder, which must hold the run (spec.json) by then, not be made by them."""

    def __init__(self, name: str, run: TrackedRun) -> None:
        check_tracker(name)
        self._name, self._run = name, run
        self._tracker: Tracker | None = None

    def _open(self) -> Tracker:
        if self._tracker is None:
            self._tracker = open_tracker(self._name, self._run)
        return self._tracker

    def log(self, row: dict[str, Any]) -> None:
        self._open().log(row)

    def summary(self, values: Mapping[str, float | None]) -> None:
        self._open().summary(values)

    def table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self._open().table(name, rows)

    def close(self) -> None:
        if self._tracker is not None:
            self._tracker.close()


@contextmanager
def tracking(name: str, run: TrackedRun) -> Iterator[Tracker | None]:
    """The tracker (None when `name` is empty), opened at first use and closed however the
    block ends."""
    if not name:
        yield None
        return
    tracker = LazyTracker(name, run)
    try:
        yield tracker
    finally:
        tracker.close()


def tracker_callbacks(tracker: Tracker | None) -> tuple[Callback, ...]:
    """The trainer's callback that hands the tracker every metrics row (none without one).
    The trainer (and torch) load here, only when a run trains."""
    from archaudit.train.callbacks import LogRows

    return () if tracker is None else (LogRows(tracker.log),)


def track_verdicts(name: str, audit: str, audit_dir: Path) -> None:
    """The audit's verdicts as its own tracker run: every family that can be judged is, and one
    that cannot (one baseline seed, a metric at chance) is a warning and a note, not a reason
    to send nothing. An audit with no finished run is a warning."""
    from archaudit.audit.results.findings import VERDICTS_ONLY, Analysis, findings
    from archaudit.progress import warn

    asked = dataclasses.replace(VERDICTS_ONLY, analyses=VERDICTS_ONLY.analyses | {Analysis.STRESS})
    try:
        found = findings(audit_dir, asked=asked)
    except ArchauditError as err:
        warn(f"verdicts not sent to the {name} tracker: {err}")
        return
    for absence in found.absent:
        warn(f"not judged, noted in the {name} tracker: {absence.where}: {absence.reason}")
    if found.judgements or found.absent:
        log_verdicts(name, audit, audit_dir, found)


def log_verdicts(name: str, audit: str, folder: Path, found: Findings) -> None:
    """The findings' verdicts as one tracker run (`<audit>/verdicts`): the table of
    `Findings.rows()`, Δ and adjusted p of each in its summary, and a table of the families
    that could not be judged, with the reason."""
    run = TrackedRun(audit, f"{audit}/verdicts", "verdicts", "all", None, folder)
    rows = [row.to_dict() for row in found.rows()]
    with tracking(name, run) as tracker:
        if tracker is None:
            return
        tracker.table("verdicts", rows)
        if found.absent:
            tracker.table("not_judged", [a.to_dict() for a in found.absent])
        if found.stability_rows():  # the stored stress test, beside the metrics' verdicts
            tracker.table("stability", [row.to_dict() for row in found.stability_rows()])
        summary: dict[str, float | None] = {}
        for row in rows:
            key = f"{row['metric']}/{row['arm']}/{row['scale']}"
            summary[f"delta/{key}"] = row["delta"]
            summary[f"p_adj/{key}"] = row["p_adj"]
        tracker.summary(summary)


def _missing(name: str) -> ConfigError:
    return ConfigError(
        f"the {name} tracker needs its extra: pip install 'archaudit[{name}]' "
        "(or 'archaudit[tracking]' for all trackers)"
    )


def _scalars(row: Mapping[str, Any]) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in row.items()
        if k != "step" and isinstance(v, int | float) and not isinstance(v, bool)
    }


def _markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    columns = list(rows[0]) if rows else []
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


@TRACKERS.register("tensorboard")
class TensorBoardTracker:
    """Event files in `<folder>/tensorboard/<run>`: `tensorboard --logdir runs/<audit>`."""

    package = "tensorboard"

    def __init__(self, run: TrackedRun) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise _missing("tensorboard") from None
        self._writer = SummaryWriter(log_dir=str(run.folder / "tensorboard" / run.name))
        self._step = 0

    def log(self, row: dict[str, Any]) -> None:
        self._step = row["step"]
        for key, value in _scalars(row).items():
            self._writer.add_scalar(key, value, global_step=row["step"])

    def summary(self, values: Mapping[str, float | None]) -> None:
        for key, value in _scalars(values).items():
            self._writer.add_scalar(f"summary/{key}", value, global_step=self._step)

    def table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self._writer.add_text(name, _markdown(rows), global_step=self._step)

    def close(self) -> None:
        self._writer.close()


@TRACKERS.register("wandb")
class WandbTracker:
    """One W&B run per audit run, grouped by (arm, scale), tagged with its seed. Online when
    W&B has an API key (WANDB_API_KEY or `wandb login`), else offline files to `wandb sync`
    later; WANDB_MODE overrides both. Its files go to WANDB_DIR when set, else the run's
    folder."""

    package = "wandb"

    def __init__(self, run: TrackedRun) -> None:
        try:
            import wandb
        except ImportError:
            raise _missing("wandb") from None
        self._run = wandb.init(
            project=run.project,
            group=run.group,
            job_type=run.arm,
            name=run.name,
            tags=[f"{k}:{v}" for k, v in run.tags.items()],
            dir=os.environ.get("WANDB_DIR") or str(run.folder),
            config=run.params,
            mode=_wandb_mode(),
            reinit="create_new",
        )
        self._wandb = wandb

    def log(self, row: dict[str, Any]) -> None:
        self._run.log(_scalars(row), step=row["step"])

    def summary(self, values: Mapping[str, float | None]) -> None:
        self._run.summary.update({k: v for k, v in values.items() if v is not None})

    def table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        columns: list[str | int] = list(rows[0]) if rows else []
        data = [[row.get(str(c)) for c in columns] for row in rows]
        self._run.log({name: self._wandb.Table(columns=columns, data=data)})

    def close(self) -> None:
        self._run.finish()


WandbMode = Literal["online", "offline", "disabled", "shared"]


def _wandb_mode() -> WandbMode:
    """WANDB_MODE as set (wandb itself checks the value), else online with an API key."""
    return cast(
        WandbMode, os.environ.get("WANDB_MODE") or ("online" if _wandb_key() else "offline")
    )


def _wandb_key() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    return netrc.is_file() and "api.wandb.ai" in netrc.read_text(errors="replace")


@TRACKERS.register("mlflow")
class MlflowTracker:
    """One MLflow run per audit run in the experiment named after the audit, tagged with arm,
    scale and seed, with those and the run's config as flat params (`model.attention.score`,
    `arm`) to filter runs by. The store is MLFLOW_TRACKING_URI, else a file store `<folder>/mlruns`
    (`mlflow ui --backend-store-uri runs/<audit>/mlruns`)."""

    package = "mlflow"

    def __init__(self, run: TrackedRun) -> None:
        try:
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise _missing("mlflow") from None
        uri = os.environ.get("MLFLOW_TRACKING_URI")
        if not uri:  # MLflow 3 keeps its file store behind this opt-in (a database needs more)
            uri = (run.folder / "mlruns").resolve().as_uri()
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self._client = MlflowClient(tracking_uri=uri)
        experiment = self._client.get_experiment_by_name(run.project)
        experiment_id = (
            experiment.experiment_id if experiment else self._client.create_experiment(run.project)
        )
        tags = {**run.tags, "group": run.group, "mlflow.runName": run.name}
        self._run_id = self._client.create_run(experiment_id, tags=tags).info.run_id
        self._step = 0
        self._at_step: dict[str, float] = {}
        """The values logged at `_step`: the summary does not log them a second time."""
        self._client.log_dict(self._run_id, _jsonable(run.config), "config.json")
        self._log_params(flat_params(run.params))

    def _log_params(self, params: Mapping[str, str]) -> None:
        from mlflow.entities import Param

        items = [Param(key, value) for key, value in params.items()]
        for start in range(0, len(items), MLFLOW_BATCH):  # MLflow takes 100 params a call
            self._client.log_batch(self._run_id, params=items[start : start + MLFLOW_BATCH])

    def log(self, row: dict[str, Any]) -> None:
        if row["step"] != self._step:
            self._step, self._at_step = row["step"], {}
        for key, value in _scalars(row).items():
            self._client.log_metric(self._run_id, _mlflow_key(key), value, step=row["step"])
            self._at_step[key] = value

    def summary(self, values: Mapping[str, float | None]) -> None:
        for key, value in _scalars(values).items():
            if self._at_step.get(key) != value:  # val_loss of the last step is already there
                self._client.log_metric(self._run_id, _mlflow_key(key), value, step=self._step)

    def table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self._client.log_dict(self._run_id, _jsonable(list(rows)), f"{name}.json")
        for row in rows:
            if "verdict" in row:  # a verdict row; a note row only goes to the file
                key = _mlflow_key(f"verdict/{row['metric']}/{row['arm']}/{row['scale']}")
                self._client.set_tag(self._run_id, key, str(row["verdict"]))

    def close(self) -> None:
        self._client.set_terminated(self._run_id)


MLFLOW_BATCH = 100
MLFLOW_PARAM_CHARS = 6000
"""MLflow's longest param value (since 2.x); a longer one is cut, with a mark."""


def flat_params(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """{"model": {"attention": {"score": "x"}}} → {"model.attention.score": "x"}, sorted: MLflow
    params are flat strings, and runs are filtered by them
    (`params."model.attention.score" = 'softpick'`). Lists and other values are JSON."""
    flat: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flat_params(value, f"{name}."))
            continue
        text = value if isinstance(value, str) else json.dumps(_jsonable(value), sort_keys=True)
        if len(text) > MLFLOW_PARAM_CHARS:
            text = text[: MLFLOW_PARAM_CHARS - 3] + "..."
        flat[_mlflow_key(name)] = text
    return dict(sorted(flat.items()))


def _mlflow_key(key: str) -> str:
    """MLflow keys allow letters, digits, `_-. /` only; `@` (several baselines) becomes `_`."""
    return "".join(c if c.isalnum() or c in "_-. /" else "_" for c in key)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
