"""`archaudit tune-baseline`: a strong baseline first, then a frozen recipe.

Sweeps the baseline's peak learning rate (and optionally the warmup fraction) at the smallest
scale, picks the point with the lowest mean validation loss (a diverged point loses), records
the sweep in `runs/<audit>/_tune/tune.json` and writes the choice into the audit file's
`[recipe]`. Arms are never tuned (R1): they inherit the recipe the baseline was tuned under.
The sweep is itself a small audit in `runs/<audit>/_tune/` (one arm per point), so it runs on
any executor and resumes like any audit.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
import tomllib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archaudit.audit.execute.coordinator import run_audit
from archaudit.audit.grid.plan import Plan, RunSpec, check_model, make_plan, scale_recipe
from archaudit.audit.grid.store import TUNE_DIR, read_finished, write_json
from archaudit.audit.setup.spec import AuditSpec, load_audit
from archaudit.config import load_toml
from archaudit.errors import ConfigError
from archaudit.files import atomic_write_text
from archaudit.metrics import PRIMARY_LOSS
from archaudit.names import BASELINE

LR_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Default sweep: the current peak LR times these (two octaves each way)."""
TUNE_FILE = "tune.json"


@dataclass(frozen=True)
class TunePoint:
    lr: float
    warmup_frac: float
    val_losses: tuple[float, ...]
    """One per seed; inf for a diverged or failed run."""

    @property
    def mean(self) -> float:
        return sum(self.val_losses) / len(self.val_losses)


@dataclass(frozen=True)
class TuneOutcome:
    points: tuple[TunePoint, ...]
    best: TunePoint
    scale: str
    record: Path
    audit_file: Path | None
    """The audit file the choice was written into (None with write=False)."""


def point_name(lr: float, warmup_frac: float) -> str:
    return f"lr-{lr:g}_warmup-{warmup_frac:g}"


def tune_plan(spec: AuditSpec, lrs: Sequence[float], warmups: Sequence[float], seeds: int) -> Plan:
    """The sweep as an audit of its own under `runs/<audit>/_tune/`: one arm per point."""
    first_baseline = next(iter(spec.baselines))
    models = {s.name: spec.models[(first_baseline, s.name)] for s in spec.scales}
    scale = min(spec.scales, key=lambda s: check_model(models[s.name]))
    shared = scale_recipe(spec.recipe, scale)
    sweep = dataclasses.replace(spec, name=TUNE_DIR, runs_dir=spec.audit_dir)
    runs = []
    for lr in lrs:
        for warmup in warmups:
            recipe = dataclasses.replace(shared, lr=lr, warmup_frac=warmup)
            name = point_name(lr, warmup)
            runs += [
                RunSpec(
                    audit=f"{spec.name}-tune",
                    arm=name,
                    mods=BASELINE,
                    baseline=first_baseline,
                    family=BASELINE,
                    scale=scale.name,
                    seed=seed,
                    model=models[scale.name],
                    recipe=recipe,
                    path=f"{name}/{scale.name}/seed-{seed}",
                )
                for seed in range(seeds)
            ]
    return Plan(sweep, tuple(runs), ())


def tune_baseline(
    audit_file: str | Path,
    *,
    lrs: Sequence[float] = (),
    warmups: Sequence[float] = (),
    seeds: int = 1,
    overrides: Sequence[str] = (),
    runs_dir: str | Path | None = None,
    executor: str | None = None,
    workers: int | None = None,
    write: bool = True,
    live: bool = True,
) -> TuneOutcome:
    audit_file = Path(audit_file)
    spec = load_audit(audit_file, overrides, runs_dir=runs_dir)
    make_plan(spec)  # the whole audit must be valid before its baseline is tuned
    lrs = tuple(lrs) or tuple(spec.recipe.lr * f for f in LR_FACTORS)
    warmups = tuple(warmups) or (spec.recipe.warmup_frac,)
    if seeds < 1 or min(lrs) <= 0 or not all(0 <= w <= 1 for w in warmups):
        raise ConfigError("tune-baseline: seeds >= 1, learning rates > 0, warmups in [0, 1]")
    plan = tune_plan(spec, lrs, warmups, seeds)
    outcome = run_audit(plan, executor=executor, workers=workers, tracker="", live=live)
    losses: dict[tuple[float, float], list[float]] = defaultdict(list)
    for run in plan.runs:
        done = read_finished(plan.run_dir(run), run)
        value = done.metric(PRIMARY_LOSS) if done else None
        finite = value if value is not None and math.isfinite(value) else math.inf
        losses[(run.recipe.lr, run.recipe.warmup_frac)].append(finite)
    points = tuple(TunePoint(lr, w, tuple(v)) for (lr, w), v in losses.items())
    best = min(points, key=lambda p: p.mean)
    if not math.isfinite(best.mean):
        raise ConfigError(f"tune-baseline: every sweep point diverged or failed ({outcome.failed})")
    record = plan.audit_dir / TUNE_FILE
    chosen = {"lr": best.lr} | ({"warmup_frac": best.warmup_frac} if len(warmups) > 1 else {})
    write_json(
        record,
        {
            "audit_file": str(audit_file),
            "scale": plan.runs[0].scale,
            "seeds": seeds,
            "metric": PRIMARY_LOSS,
            "points": [dataclasses.asdict(p) | {"mean": p.mean} for p in points],
            "chosen": chosen,
            "time": time.time(),
        },
    )
    if write:
        set_recipe_values(audit_file, chosen, note=f"tuned by archaudit tune-baseline: {record}")
    return TuneOutcome(points, best, plan.runs[0].scale, record, audit_file if write else None)


_HEADER = re.compile(r"^\s*\[\s*recipe\s*\]\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")


def set_recipe_values(path: Path, values: dict[str, Any], *, note: str) -> None:
    """Set keys of the `[recipe]` table in place, keeping every comment and other line."""
    lines = path.read_text().splitlines()
    header = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if header is None:
        if "recipe" in load_toml(path):
            raise ConfigError(f"{path}: write the recipe as a [recipe] table to let me edit it")
        lines += ["", "[recipe]"]
        header = len(lines) - 1
    end = next((i for i in range(header + 1, len(lines)) if _TABLE.match(lines[i])), len(lines))
    for key, value in values.items():
        text = f"{key} = {value!r}  # {note}"
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        found = next((i for i in range(header + 1, end) if pattern.match(lines[i])), None)
        if found is None:
            lines.insert(header + 1, text)
            end += 1
        else:
            lines[found] = text
    new = "\n".join(lines) + "\n"
    recipe = tomllib.loads(new).get("recipe", {})
    if any(recipe.get(k) != v for k, v in values.items()):
        raise ConfigError(f"{path}: could not set {values} in [recipe]; edit it by hand")
    atomic_write_text(path, new)
