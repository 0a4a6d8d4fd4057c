"""The DONE record: what one finished run produced, written once and read by every reader.

The runner builds a `RunRecord` when a run has trained and been evaluated, and the store
publishes it as the run directory's DONE file (`to_json`). Everyone who needs a result (the
exports, `status`, `rerun`, `tune-baseline`, the sequential loop, the report) reads it back
with `from_json`, which checks every field. A hand-edited or truncated DONE is therefore one
error naming the file and the field, never a KeyError three modules later.
"""

from __future__ import annotations

import dataclasses
import math
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.errors import DataError
from archaudit.names import ResultStatus

if TYPE_CHECKING:
    from archaudit.audit.grid.plan import RunSpec


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One finished run: who it is, how it ended, and its final metrics."""

    id: str
    """The run id (`RunSpec.run_id`): DONE of another run is never read as this run's."""
    arm: str
    scale: str
    seed: int
    family: str
    tuned: bool
    duties: tuple[str, ...] = ()
    """The arm's protocol duties (`stats.records.table.Duty`), so that readers need not read
    run.json."""
    status: str
    """A `ResultStatus`: ok, or diverged when the loss blew up (at `diverged_step`)."""
    diverged_step: int | None
    metrics: Mapping[str, float | None]
    """Final metrics: losses, parameters, MoE routing, the suite's scores. None: not measured."""
    train: Mapping[str, Any]
    """What the trainer reported (`TrainResult.to_json()`)."""
    attempts: int
    """How many times a worker started this run (resumes included)."""
    host: str
    finished: float
    """When DONE was written (Unix time). Provenance only: no result depends on it."""

    @classmethod
    def of_run(
        cls,
        spec: RunSpec,
        *,
        status: str,
        metrics: Mapping[str, float | None],
        diverged_step: int | None = None,
        train: Mapping[str, Any] | None = None,
        attempts: int = 1,
    ) -> RunRecord:
        """The record of `spec`'s run, finished on this host now."""
        return cls(
            id=spec.run_id,
            arm=spec.arm,
            scale=spec.scale,
            seed=spec.seed,
            family=spec.family,
            tuned=spec.tuned,
            duties=tuple(spec.duties),
            status=status,
            diverged_step=diverged_step,
            metrics=dict(metrics),
            train=dict(train or {}),
            attempts=attempts,
            host=socket.gethostname(),
            finished=time.time(),
        )

    def metric(self, name: str) -> float | None:
        """One final metric; None when the run did not measure it."""
        return self.metrics.get(name)

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return data | {
            "duties": list(self.duties),
            "metrics": dict(self.metrics),
            "train": dict(self.train),
        }

    @classmethod
    def from_json(cls, data: Any, where: Path | str) -> RunRecord:
        """Check and read a DONE record; a bad field raises DataError naming `where`."""
        if not isinstance(data, dict):
            raise DataError(f"{where} is not a result record (not a JSON object)")
        for name, kinds in _FIELD_TYPES.items():
            value = data.get(name)
            if name not in data or not _is(value, kinds):
                raise DataError(f"{where} is not a result record ({name} = {value!r:.60})")
        statuses = [status.value for status in ResultStatus]
        if data["status"] not in statuses:
            raise DataError(
                f"{where}: status {data['status']!r} is not one of {', '.join(statuses)}"
            )
        bad = [k for k, v in data["metrics"].items() if v is not None and not _is(v, (int, float))]
        if bad:
            raise DataError(f"{where}: metric {bad[0]!r} is not a number")
        duties = data.get("duties", [])  # absent from a DONE written before duties were kept
        if not isinstance(duties, list) or not all(isinstance(d, str) for d in duties):
            raise DataError(f"{where}: duties = {duties!r:.60} is not a list of duty names")
        return cls(**{name: data[name] for name in _FIELD_TYPES}, duties=tuple(duties))


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,), "arm": (str,), "scale": (str,), "seed": (int,), "family": (str,),
    "tuned": (bool,), "status": (str,), "diverged_step": (int, type(None)), "metrics": (dict,),
    "train": (dict,), "attempts": (int,), "host": (str,), "finished": (int, float),
}  # fmt: skip
"""What each field of DONE must hold (a bool is no int here, as JSON means it)."""


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


@dataclass(frozen=True)
class RoutingAtEnd:
    """An MoE run's routing at its last logged step (metrics.jsonl), read in one place: the
    runner records its `summary` in DONE, the report shows it layer by layer."""

    step: int
    load: tuple[tuple[float, ...], ...]
    """Per MoE layer: each expert's share of the chosen assignments (sums to 1)."""
    dropped: float
    entropy: float

    @classmethod
    def of_rows(cls, rows: Sequence[Mapping[str, Any]]) -> RoutingAtEnd | None:
        """From the last row with routing fields; None for a run without MoE layers."""
        last = next((row for row in reversed(rows) if "moe_load" in row), None)
        if last is None:
            return None
        return cls(
            step=int(last["step"]),
            load=tuple(tuple(float(v) for v in layer) for layer in last["moe_load"]),
            dropped=_number(last.get("moe_dropped")),
            entropy=_number(last.get("moe_router_entropy")),
        )

    def summary(self) -> dict[str, float]:
        """Run metrics: dropped fraction, router entropy, and `moe_load_imbalance` = max over
        layers and experts of E·load (1 = perfectly balanced, E = all to one expert)."""
        return {
            "moe_dropped": self.dropped,
            "moe_router_entropy": self.entropy,
            "moe_load_imbalance": max(len(load) * max(load) for load in self.load),
        }


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)
