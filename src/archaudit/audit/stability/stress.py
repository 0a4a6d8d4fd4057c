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
import functools
import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from archaudit.audit.grid.plan import (
    BASELINE,
    Plan,
    PlannedArm,
    RunSpec,
    expand_arms,
    make_plan,
    model_sizes,
    run_flops,
    scale_recipe,
)
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.grid.store import read_finished, read_spec
from archaudit.audit.setup.spec import AuditSpec, ScaleSpec
from archaudit.config import ModelConfig, Recipe, canonical_json, to_dict
from archaudit.data.identity import recipe_hash
from archaudit.errors import ConfigError, DataError, did_you_mean
from archaudit.metrics import PRIMARY_LOSS
from archaudit.rundir import EVENTS, METRICS
from archaudit.stats.analyses.stability import (
    Sweep,
    SweepRun,
    measure,
    undeclarable,
    undeclarable_depth,
)

if TYPE_CHECKING:
    from archaudit.mods import Arm

STRESS_DIR = "_stress"
UNIGRAM_TOKENS = 10_000_000
"""The unigram loss counts at most this many training tokens."""


@dataclass(frozen=True)
class StressPoint:
    """One run of the stress test, and where its result is (its own folder or a reused one)."""

    run: RunSpec
    kind: str
    """"lr" (the sweep), "depth" (the depth stress) or "above" (a rate above the grid, while
    the baseline has not broken: `stress.extra_rates`)."""
    reused: Path | None = None
    """The audit's finished run this point reads instead of training."""


@dataclass(frozen=True)
class StressPlan:
    spec: AuditSpec
    plan: Plan
    """The runs still to train, under runs/<audit>/_stress/ (finished ones are left out)."""
    points: tuple[StressPoint, ...]
    scale: str
    tokens: int
    """Tokens all runs to train will process."""
    flops: float
    audit_flops: float
    """The audit's own training FLOPs, for scale."""
    finished: int = 0
    """Stress runs already trained (in runs/<audit>/_stress/)."""
    above_left: int = 0
    """Runs the rates above the grid may still add (the baseline has not broken yet; not in
    `points`, the tokens or the FLOPs)."""

    def run_dir(self, point: StressPoint) -> Path:
        return point.reused or self.plan.run_dir(point.run)

    def power_note(self) -> str:
        """Why this sweep (or its depth stress) cannot declare any arm, with the seeds that
        could ("" when both can): said before anything trains."""
        settings = self.spec.stress
        swept = {p.run.arm for p in self.points if p.kind == "lr" and p.run.mods != BASELINE}
        deep = {p.run.arm for p in self.points if p.kind == "depth" and p.run.mods != BASELINE}
        notes = (
            undeclarable(settings.seeds, settings.lr_factors, len(swept), settings.alpha),
            undeclarable_depth(
                settings.seeds,
                settings.depths if deep else (),
                settings.depth_lr_factors,
                len(deep),
                settings.alpha,
            ),
        )
        return "; ".join(n for n in notes if n)

    def cost_line(self) -> str:
        trained = len(self.plan.runs)
        reused = len(self.points) - trained - self.finished
        ratio = self.flops / self.audit_flops if self.audit_flops else float("nan")
        return (
            f"stress test: {len(self.points)} runs ({trained} to train, {self.finished} "
            f"finished, {reused} reused from the audit) at scale {self.scale!r}: "
            f"{self.tokens:,} tokens, {self.flops:.2e} FLOPs, {ratio:.1f}× the audit's training"
            + self._above_note()
        )

    def _above_note(self) -> str:
        if not self.above_left:
            return ""
        return (
            f"; up to {self.above_left} more runs above the grid while the baseline does not "
            "break (stress.extra_rates)"
        )


def stress_plan(spec: AuditSpec) -> StressPlan:
    """The sweep (and depth stress) of every chosen arm, checked like an audit's plan."""
    audit = make_plan(spec)
    settings = spec.stress
    scale = _scale(spec)
    planned = expand_arms(spec)
    arms = [p for p in planned if _chosen(p.arm.name, settings.arms, planned)]
    depth_arms = _depth_arms(arms, settings.depth_arms, planned)
    if settings.fragile:
        _chosen(BASELINE, settings.fragile, arms, key="stress.fragile")
        if BASELINE in settings.fragile:
            raise ConfigError("stress.fragile: the baseline is the reference, not a fragile arm")
    points: list[StressPoint] = []
    for chosen in arms:
        for factor in settings.lr_factors:
            points += _points(spec, chosen.arm, scale=scale, depth=1, factor=factor, kind="lr")
    for chosen in depth_arms if settings.depths else []:
        for depth in settings.depths:
            for factor in settings.depth_lr_factors:
                points += _points(
                    spec, chosen.arm, scale=scale, depth=depth, factor=factor, kind="depth"
                )
    finished = _finished(audit)
    points = [_reuse(p, finished) for p in _distinct(points)]
    stress = dataclasses.replace(spec, name=STRESS_DIR, runs_dir=spec.audit_dir)
    reach = functools.partial(_points, spec, scale=scale, depth=1, kind="above")
    above, more = _above_grid(spec, arms, points, reach, Plan(stress, (), ()).run_dir)
    points += above
    own = Plan(stress, tuple(p.run for p in points if p.reused is None), ())
    todo = tuple(r for r in own.runs if read_finished(own.run_dir(r), r) is None)
    return StressPlan(
        spec,
        dataclasses.replace(own, runs=todo),
        tuple(points),
        scale.name,
        sum(_tokens(r) for r in todo),
        sum(run_flops(r) for r in todo),
        sum(run_flops(r) for r in audit.runs),
        len(own.runs) - len(todo),
        more,
    )


def _above_grid(
    spec: AuditSpec,
    arms: Sequence[PlannedArm],
    points: Sequence[StressPoint],
    reach: Callable[..., list[StressPoint]],
    run_dir: Callable[[RunSpec], Path],
) -> tuple[list[StressPoint], int]:
    """The rates above the grid (`stress.extra_rates`), each the top one × the grid's last
    ratio, for the baseline and every arm still censored there, while the baseline's finished
    runs have not broken at the top rate trained; and how many more runs such rates may still
    add (0 once the baseline broke). Decided from the finished runs only, so each `run_stress`
    round adds the next rate once the previous one has trained."""
    factors = spec.stress.lr_factors
    swept = [p for p in points if p.kind == "lr"]
    added: list[StressPoint] = []
    for k in range(1, spec.stress.extra_rates + 1):
        censored = _censored(spec, [*swept, *added], run_dir)
        if not censored.get(BASELINE):
            left = spec.stress.extra_rates - k + 1
            broke = censored.get(BASELINE) is False
            return added, 0 if broke else left * len(arms) * spec.stress.seeds
        factor = factors[-1] * (factors[-1] / factors[-2]) ** k
        chosen = [a.arm for a in arms if censored.get(a.arm.name)]
        added += [p for arm in chosen for p in reach(arm, factor=factor)]
    return added, 0


def _censored(
    spec: AuditSpec, points: Sequence[StressPoint], run_dir: Callable[[RunSpec], Path]
) -> dict[str, bool | None]:
    """Per arm, whether its largest stable rate is the top rate trained
    (`ArmStability.censored`); None while some of its points have not finished."""
    by_arm: dict[str, list[SweepRun | None]] = {}
    for p in points:
        read = read_sweep_run(p.reused or run_dir(p.run), p.run, spec.recipe.lr)
        by_arm.setdefault(p.run.arm, []).append(read)
    done = {arm: [r for r in runs if r is not None] for arm, runs in by_arm.items()}
    return {
        arm: measure(Sweep.of(arm, done[arm])).censored if len(done[arm]) == len(runs) else None
        for arm, runs in by_arm.items()
    }


def _depth_arms(
    arms: Sequence[PlannedArm], named: Sequence[str], planned: Sequence[PlannedArm]
) -> list[PlannedArm]:
    """The depth stress's arms: the baseline and those named, or when none is, every swept
    residual/norm arm (R7: the arms with a cross-scale duty)."""
    if named:
        return [p for p in arms if _chosen(p.arm.name, named, planned)]
    return [p for p in arms if p.arm.name == BASELINE or p.arm.requires_cross_scale]


def _chosen(
    arm: str, wanted: Sequence[str], planned: Sequence[PlannedArm], key: str = "[stress]"
) -> bool:
    """Whether `arm` is swept: the baseline always, the others when named (or none is)."""
    known = [p.arm.name for p in planned]
    for name in wanted:
        if name not in known:
            raise ConfigError(
                f"{key}: {name!r} is not a swept arm of the audit{did_you_mean(name, known)}"
            )
    return arm == BASELINE or not wanted or arm in wanted


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
    base = spec.models[(next(iter(spec.baselines)), scale.name)]
    return dataclasses.replace(base, n_layers=base.n_layers * depth)


def _points(
    spec: AuditSpec, arm: Arm, *, scale: ScaleSpec, depth: int, factor: float, kind: str
) -> list[StressPoint]:
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
        for seed in spec.seeds.numbers(spec.stress.seeds)
    ]


def _distinct(points: list[StressPoint]) -> list[StressPoint]:
    """A depth point at a rate of the sweep with depth 1 never occurs twice; keep the first."""
    seen: dict[str, StressPoint] = {}
    for point in points:
        seen.setdefault(point.run.path, point)
    return list(seen.values())


def _training(run: RunSpec) -> tuple[str, str, int]:
    """What determines a run's training: its model, hashed recipe and seed."""
    return canonical_json(to_dict(run.model)), recipe_hash(run.recipe), run.seed


def _finished(audit: Plan) -> dict[tuple[str, str, int], Path]:
    """The audit's finished runs by what determines their training."""
    runs = ((run, audit.run_dir(run)) for run in audit.runs)
    return {_training(run): path for run, path in runs if read_finished(path, run) is not None}


def _reuse(point: StressPoint, finished: dict[tuple[str, str, int], Path]) -> StressPoint:
    """The point read from the audit's finished run that trained the same, if any."""
    reused = finished.get(_training(point.run))
    return dataclasses.replace(point, reused=reused) if reused else point


def _trained_as(run_dir: Path, run: RunSpec) -> RunRecord | None:
    """The result in `run_dir` when the run stored there trained as `run` does (the point's own
    folder, or the audit run it reuses, whose suite may differ); None before it finished, and
    for a folder left by another recipe or seed (a `--plan` or an analysis supersedes nothing)."""
    try:
        stored = read_spec(run_dir)
    except DataError:  # no readable run.json: the result must be `run`'s own
        stored = run
    return read_finished(run_dir, stored) if _training(stored) == _training(run) else None


def _tokens(run: RunSpec) -> int:
    return run.recipe.steps * run.recipe.batch_tokens


def read_sweep_run(run_dir: Path, run: RunSpec, recipe_lr: float) -> SweepRun | None:
    """A finished point as the measures read it; None while it has no result. Stable: it did
    not diverge, raised no rising-gradient warning, and did not collapse: a run above the
    recipe's rate `recipe_lr` that ended at or above the unigram loss learned nothing a table
    of token frequencies does not know. (At or below the recipe's rate such a run is only
    undertrained.)"""
    record = _trained_as(run_dir, run)
    rows = _rows(run_dir / METRICS)
    if record is None or not rows:
        return None
    final = _final_loss(record)
    rising = [e["step"] for e in _rows(run_dir / EVENTS) if e.get("event") == "grad_norm_rising"]
    high = run.recipe.lr > recipe_lr * (1 + 1e-9)
    collapsed = high and final is not None and final >= unigram_loss(run.recipe)
    broke = _break_step(record, rows, rising, collapsed)
    return SweepRun(
        arm=run.arm,
        lr=run.recipe.lr,
        seed=run.seed,
        initial_loss=float(rows[0]["loss"]),
        final_loss=final,
        stable=broke is None and final is not None,
        break_step=broke,
        layers=run.model.n_layers,
        grad_level=grad_level(rows),
    )


def grad_level(rows: Sequence[dict]) -> float:
    """The mean of ln ‖g‖ over the second half of the logged steps (NaN when none has a
    finite positive gradient norm): the primary test's gradient-norm measure."""
    half = rows[len(rows) // 2 :]
    logs = [
        math.log(g)
        for g in (row.get("grad_norm") for row in half)
        if isinstance(g, int | float) and math.isfinite(g) and g > 0
    ]
    return sum(logs) / len(logs) if logs else math.nan


def _final_loss(record: RunRecord) -> float | None:
    value = record.metrics.get(PRIMARY_LOSS)
    return None if record.status != "ok" or value is None else float(value)


def _break_step(
    record: RunRecord, rows: list[dict], rising: list[int], collapsed: bool
) -> int | None:
    """The first of: the divergence and the first rising-gradient warning; for a run that
    collapsed, the step of its largest one-step rise of the training loss (where it broke)."""
    candidates = list(rising)
    if record.diverged_step is not None:
        candidates.append(record.diverged_step)
    if collapsed and len(rows) > 1:
        jumps = [(b["loss"] - a["loss"], int(b["step"])) for a, b in itertools.pairwise(rows)]
        candidates.append(max(jumps)[1])
    return min(candidates, default=None)


def unigram_loss(recipe: Recipe) -> float:
    """Cross-entropy (nats/token) of the validation tokens under the training tokens'
    frequencies (add-one smoothed): what a model that learned only the unigram reaches."""
    return _unigram_loss(dataclasses.replace(recipe, lr=1.0, steps=1, warmup_frac=0.0))


@functools.lru_cache(maxsize=16)
def _unigram_loss(recipe: Recipe) -> float:
    from archaudit.data.corpus import prepare_corpus

    corpus = prepare_corpus(recipe)
    train, val = np.asarray(corpus.train[:UNIGRAM_TOKENS]), np.asarray(corpus.val)
    counts = np.bincount(train, minlength=corpus.tokenizer.vocab_size) + 1.0
    return float(-np.log(counts[val] / counts.sum()).mean())


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
