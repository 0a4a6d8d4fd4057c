"""`archaudit rerun RUN_DIR`: train a finished run again and compare, to rule out hardware or
library confounders. The rerun goes to `RUN_DIR/reruns/<n>/` with the same model, recipe, seed
and torch threads (optionally on another device); its loss curve and final metrics are compared
with the stored ones by maximum absolute difference, "bit-identical" when every one is 0."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archaudit.audit.grid import store
from archaudit.errors import DataError
from archaudit.metrics import PRIMARY_LOSS

CURVE_KEYS = ("loss", PRIMARY_LOSS, "grad_norm")
RERUN_FILE = "rerun.json"


@dataclass(frozen=True)
class RerunReport:
    run_dir: str
    rerun_dir: str
    device: str
    steps_compared: int
    curve_max_abs_diff: dict[str, float]
    """Per curve (loss, val_loss, grad_norm): max |stored − rerun| over common steps."""
    metric_abs_diff: dict[str, float]
    """Per final metric of DONE: |stored − rerun| (NaN when one side lacks it)."""

    @property
    def max_abs_diff(self) -> float:
        """The largest difference of all; NaN when a number exists on one side only."""
        return _largest([*self.curve_max_abs_diff.values(), *self.metric_abs_diff.values()])

    @property
    def bit_identical(self) -> bool:
        return self.max_abs_diff == 0.0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {
            "max_abs_diff": self.max_abs_diff,
            "bit_identical": self.bit_identical,
        }


def rerun(run_dir: str | Path, *, device: str = "") -> RerunReport:
    from archaudit.audit.execute.runner import operational_recipe, run_metrics
    from archaudit.audit.launcher.launch import RunOptions
    from archaudit.train import train

    run_dir = Path(run_dir)
    spec = store.read_spec(run_dir)
    stored = store.read_record(run_dir)
    if stored is None:
        raise DataError(f"{run_dir} has not finished (no DONE): nothing to compare against")
    attempts = (run_dir / store.ATTEMPTS).read_text().splitlines()
    threads = json.loads(attempts[-1]).get("threads", 0) if attempts else 0
    recipe = operational_recipe(spec, RunOptions(threads=threads, device=device))
    reruns = run_dir / "reruns"
    target = reruns / str(len(list(reruns.glob("*"))) if reruns.is_dir() else 0)
    result = train(spec.model, recipe, target, seed=spec.seed)
    metrics = run_metrics(target, spec, result, recipe.device)
    old_curve, new_curve = _curve(run_dir), _curve(target)
    common = sorted(set(old_curve) & set(new_curve))
    report = RerunReport(
        run_dir=str(run_dir),
        rerun_dir=str(target),
        device=device or spec.recipe.device,
        steps_compared=len(common),
        curve_max_abs_diff={
            key: _max_diff(old_curve, new_curve, common, key) for key in CURVE_KEYS
        },
        metric_abs_diff={
            key: _diff(value, metrics.get(key)) for key, value in stored.metrics.items()
        },
    )
    store.write_json(target / RERUN_FILE, report.to_json())
    return report


def _curve(run_dir: Path) -> dict[int, dict[str, Any]]:
    rows = (json.loads(line) for line in (run_dir / store.METRICS).read_text().splitlines())
    return {row["step"]: row for row in rows}


def _max_diff(old: dict[int, dict], new: dict[int, dict], steps: list[int], key: str) -> float:
    """max |old − new| of one curve over the steps where either side recorded it."""
    return _largest(
        [_diff(old[s].get(key), new[s].get(key)) for s in steps if key in old[s] | new[s]]
    )


def _largest(diffs: list[float]) -> float:
    """The largest difference; NaN (a number on one side only) wins over any number."""
    return math.nan if any(map(math.isnan, diffs)) else max(diffs, default=0.0)


def _diff(a: Any, b: Any) -> float:
    if a is None and b is None:
        return 0.0
    if a is None or b is None:
        return math.nan
    return abs(float(a) - float(b))
