"""`archaudit stress AUDIT`: every arm's learning-rate sweep and depth stress (docs/stability.md).

The stress runs are a small audit of their own in `runs/<audit>/_stress/` (labelled `<audit>-
stress`), so they run on any executor, resume, and never enter the audit's verdicts (the store
skips folders starting with "_"). Each point trains the audit's recipe at the scale chosen by
`[stress]` with only the peak rate changed (warmup and schedule kept), for `stress.seeds`
seeds; the depth stress trains the same width at multiples of the layers. A point whose model,
recipe and seed match a finished run of the audit is read from that run instead of retrained.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from archaudit.audit.plan import (
    BASELINE,
    Plan,
    RunSpec,
    expand_arms,
    make_plan,
    model_sizes,
    scale_recipe,
)
from archaudit.audit.record import RunRecord
from archaudit.audit.spec import AuditSpec, ScaleSpec
from archaudit.audit.store import read_record
from archaudit.config import ModelConfig, build, merge_tables
from archaudit.data.identity import recipe_hash
from archaudit.errors import ConfigError, did_you_mean
from archaudit.rundir import EVENTS, METRICS
from archaudit.stats.stability import SweepRun

STRESS_DIR = "_stress"


@dataclass(frozen=True)
class StressPoint:
    """One run of the stress test, and where its result is (its own folder or a reused one)."""

    run: RunSpec
    kind: str
    """"lr" (the sweep) or "depth" (the depth stress)."""
    reused: Path | None = None
    """The audit's finished run this point reads instead of training."""


@dataclass(frozen=True)
class StressPlan:
    spec: AuditSpec
    plan: Plan
    """The runs to train, under runs/<audit>/_stress/."""
    points: tuple[StressPoint, ...]
    scale: str
    tokens: int
    """Tokens all runs to train will process."""
    flops: float
    audit_flops: float
    """The audit's own training FLOPs, for scale."""

    def run_dir(self, point: StressPoint) -> Path:
        return point.reused or self.plan.run_dir(point.run)

    def cost_line(self) -> str:
        trained = len(self.plan.runs)
        reused = len(self.points) - trained
        ratio = self.flops / self.audit_flops if self.audit_flops else float("nan")
        return (
            f"stress test: {len(self.points)} runs ({trained} to train, {reused} reused from the "
            f"audit) at scale {self.scale!r}: {self.tokens:,} tokens, {self.flops:.2e} FLOPs, "
            f"{ratio:.1f}× the audit's training"
        )


def stress_plan(spec: AuditSpec) -> StressPlan:
    """The sweep (and depth stress) of every chosen arm, checked like an audit's plan."""
    audit = make_plan(spec)
    settings = spec.stress
    scale = _scale(spec)
    arms = [p for p in expand_arms(spec) if _chosen(p.arm.name, settings.arms, spec)]
    depth_arms = [
        p for p in arms if _chosen(p.arm.name, settings.depth_arms or settings.arms, spec)
    ]
    points: list[StressPoint] = []
    for planned in arms:
        for factor in settings.lr_factors:
            points += _points(spec, planned.arm, scale, 1, factor, "lr")
    for planned in depth_arms if settings.depths else []:
        for depth in settings.depths:
            for factor in settings.depth_lr_factors:
                points += _points(spec, planned.arm, scale, depth, factor, "depth")
    finished = _finished(audit)
    points = [_reuse(p, finished) for p in _distinct(points)]
    todo = tuple(p.run for p in points if p.reused is None)
    stress = dataclasses.replace(spec, name=STRESS_DIR, runs_dir=spec.audit_dir)
    plan = Plan(stress, todo, ())
    return StressPlan(
        spec,
        plan,
        tuple(points),
        scale.name,
        sum(_tokens(r) for r in todo),
        sum(_flops(r) for r in todo),
        sum(_flops(r) for r in audit.runs),
    )


def _chosen(arm: str, wanted: Sequence[str], spec: AuditSpec) -> bool:
    if arm == BASELINE or not wanted:
        return True
    known = [p.arm.name for p in expand_arms(spec)]
    for name in wanted:
        if name not in known:
            raise ConfigError(
                f"stress.arms: {name!r} is not an arm of the audit{did_you_mean(name, known)}"
            )
    return arm in wanted


def _scale(spec: AuditSpec) -> ScaleSpec:
    names = [s.name for s in spec.scales]
    if spec.stress.scale:
        if spec.stress.scale not in names:
            raise ConfigError(
                f"stress.scale = {spec.stress.scale!r}{did_you_mean(spec.stress.scale, names)}"
            )
        return next(s for s in spec.scales if s.name == spec.stress.scale)
    return min(spec.scales, key=lambda s: model_sizes(_model(spec, s, 1))[0])


def _model(spec: AuditSpec, scale: ScaleSpec, depth: int) -> ModelConfig:
    delta = next(iter(spec.baselines.values()))
    base = build(ModelConfig, merge_tables(scale.model, delta), section=f"scales.{scale.name}")
    return dataclasses.replace(base, n_layers=base.n_layers * depth)


def _points(
    spec: AuditSpec, arm: object, scale: ScaleSpec, depth: int, factor: float, kind: str
) -> list[StressPoint]:
    from archaudit.mods import Arm

    assert isinstance(arm, Arm)
    model = arm.apply(_model(spec, scale, depth))
    recipe = arm.apply_recipe(scale_recipe(spec.recipe, scale))
    recipe = dataclasses.replace(recipe, lr=spec.recipe.lr * factor)
    label = f"{scale.name}-L{model.n_layers}-lr{recipe.lr:.3g}"
    return [
        StressPoint(
            RunSpec(
                audit=f"{spec.name}-stress",
                arm=arm.name,
                mods=arm.name,
                baseline=next(iter(spec.baselines)),
                family=arm.family,
                scale=label,
                seed=seed,
                tuned=arm.changes_recipe,
                duties=arm.duties,
                model=model,
                recipe=recipe,
                path=f"{arm.name}/{label}/seed-{seed}",
            ),
            kind,
        )
        for seed in range(spec.stress.seeds)
    ]


def _distinct(points: list[StressPoint]) -> list[StressPoint]:
    """A depth point at a rate of the sweep with depth 1 never occurs twice; keep the first."""
    seen: dict[str, StressPoint] = {}
    for point in points:
        seen.setdefault(point.run.path, point)
    return list(seen.values())


def _finished(audit: Plan) -> dict[tuple[ModelConfig, str, int], Path]:
    """The audit's finished runs by what determines their training: model, recipe, seed."""
    done = {}
    for run in audit.runs:
        if read_record(audit.run_dir(run)) is not None:
            done[(run.model, recipe_hash(run.recipe), run.seed)] = audit.run_dir(run)
    return done


def _reuse(point: StressPoint, finished: dict[tuple[ModelConfig, str, int], Path]) -> StressPoint:
    """The point read from the audit's finished run with its model, recipe and seed, if any."""
    run = point.run
    reused = finished.get((run.model, recipe_hash(run.recipe), run.seed))
    return dataclasses.replace(point, reused=reused) if reused else point


def _tokens(run: RunSpec) -> int:
    return run.recipe.steps * run.recipe.batch_tokens


def _flops(run: RunSpec) -> float:
    from archaudit.model import training_flops_per_token

    active = model_sizes(run.model)[1]
    return _tokens(run) * training_flops_per_token(run.model, active)


def read_sweep_run(run_dir: Path, run: RunSpec) -> SweepRun | None:
    """A finished point as the measures read it; None while it has no result."""
    record = read_record(run_dir)
    if record is None:
        return None
    rows = _rows(run_dir / METRICS)
    if not rows:
        return None
    initial = float(rows[0]["loss"])
    final = _final_loss(record)
    rising = [e["step"] for e in _rows(run_dir / EVENTS) if e.get("event") == "grad_norm_rising"]
    broke = _break_step(record, rows, rising, initial)
    stable = broke is None and final is not None and final < initial
    return SweepRun(
        arm=run.arm,
        lr=run.recipe.lr,
        seed=run.seed,
        initial_loss=initial,
        final_loss=final,
        stable=stable,
        break_step=broke,
        layers=run.model.n_layers,
    )


def _final_loss(record: RunRecord) -> float | None:
    value = record.metrics.get("val_loss")
    return None if record.status != "ok" or value is None else float(value)


def _break_step(
    record: RunRecord, rows: list[dict], rising: list[int], initial: float
) -> int | None:
    """The first of: the divergence, the first rising-gradient warning, and the first logged
    validation loss back at or above the initial loss after the training loss fell below it."""
    candidates = list(rising)
    if record.diverged_step is not None:
        candidates.append(record.diverged_step)
    fell = False
    for row in rows:
        fell = fell or row["loss"] < initial
        if fell and row.get("val_loss") is not None and row["val_loss"] >= initial:
            candidates.append(int(row["step"]))
            break
    return min(candidates, default=None)


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_stress(
    spec: AuditSpec, *, executor: str | None = None, workers: int | None = None, live: bool = True
) -> StressPlan:
    """Train (or resume) every stress run the plan has left to train."""
    from archaudit.audit.coordinator import run_audit

    plan = stress_plan(spec)
    if plan.plan.runs:
        run_audit(plan.plan, executor=executor, workers=workers, tracker="", live=live)
    return plan
