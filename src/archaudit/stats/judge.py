"""`judge`: every arm's verdict on one metric at one scale, per PROTOCOL.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from archaudit.errors import ConfigError
from archaudit.stats.compare import ArmTest, compare_arm, decide
from archaudit.stats.corrections import check_correction, fwer_uncorrected
from archaudit.stats.grading import grade_arm, looks_like_loss
from archaudit.stats.noise import NoiseFloor, noise_floor
from archaudit.stats.power import Design, minimum_detectable_effect, power
from archaudit.stats.samples import ArmSample, sample_arm
from archaudit.stats.serialize import JsonResult
from archaudit.stats.table import Table

ATTENTION_OUTPUT = "attention-output"


@dataclass(frozen=True)
class ArmVerdict(JsonResult):
    """One arm's numbers and verdict. Δ, z and t are signed so that positive = better."""

    arm: str
    scale: str
    family: str | None
    tuned: bool
    n_seeds: int
    """Finished seeds with a value for the metric."""
    n_diverged: int
    diverged_step: int | None
    """The earliest step at which one of its runs diverged."""
    mean: float
    sd: float
    delta: float
    z: float
    """Paper-mode z = Δ/σ."""
    p_z: float
    t: float
    """Welch's t (NaN with one seed)."""
    df: float
    p_welch: float
    test: str | None
    """Which p drove the verdict, "z" or "welch"; None when the arm was not tested."""
    p: float
    p_adj: float
    verdict: str
    mde: float
    """Smallest true effect (metric units) this design detects with the target power."""
    grade: str
    grade_missing: tuple[str, ...]


@dataclass(frozen=True)
class Judgement(JsonResult):
    """The verdicts of all arms against one baseline, with the family's parameters."""

    source: str
    metric: str
    scale: str
    baseline: str
    anchors: tuple[str, ...]
    excluded: tuple[str, ...]
    lower_is_better: bool
    correction: str
    alpha: float
    power_target: float
    sigma: float
    sigma_dof: int
    baseline_mean: float
    baseline_n: int
    m: int
    """Number of arms tested (finished, not the baseline): the size of the corrected family."""
    fwer_uncorrected: float
    arms: tuple[ArmVerdict, ...]
    notes: tuple[str, ...]

    def arm(self, name: str) -> ArmVerdict:
        """The verdict of one arm."""
        for verdict in self.arms:
            if verdict.arm == name:
                return verdict
        raise KeyError(name)


@dataclass(frozen=True)
class Family:
    """What a judgement is computed from: the baseline, the noise floor and each arm's seeds."""

    metric: str
    scale: str
    baseline: ArmSample
    noise: NoiseFloor
    sign: float
    """+1 when higher is better, −1 when lower is better."""
    arms: tuple[ArmSample, ...]

    def compare(self, values: np.ndarray) -> ArmTest:
        """Test an arm's seed values against the baseline."""
        return compare_arm(values, self.baseline.values, self.noise.sigma, self.sign)

    def design(self, arm_seeds: int, m: int, alpha: float, correction: str) -> Design:
        """The power design of an arm with `arm_seeds` seeds in a family of m arms."""
        return Design(
            arm_seeds=arm_seeds,
            baseline_seeds=len(self.baseline.values),
            arms=max(m, 1),
            alpha=alpha,
            correction=correction,
            sigma_dof=self.noise.dof,
        )


def collect_family(
    table: Table,
    metric: str,
    *,
    baseline: str = "baseline",
    anchors: Sequence[str] = (),
    lower_is_better: bool = False,
    scale: str | None = None,
    exclude: Sequence[str] = (),
) -> Family:
    """Check the names, then gather the baseline, noise floor and arm samples at one scale."""
    table.check_metric(metric)
    scale = table.resolve_scale(scale)
    table.check_arm(baseline, "baseline")
    for anchor in anchors:
        table.check_arm(anchor, "anchor")
    for arm in exclude:
        table.check_arm(arm, "excluded arm")
    floor = [sample_arm(table, metric, scale, arm) for arm in (baseline, *anchors)]
    arms = tuple(
        sample_arm(table, metric, scale, arm)
        for arm in table.arms_at(scale)
        if arm != baseline and arm not in exclude
    )
    return Family(
        metric=metric,
        scale=scale,
        baseline=floor[0],
        noise=noise_floor(floor, metric),
        sign=-1.0 if lower_is_better else 1.0,
        arms=arms,
    )


def judge(
    table: Table,
    metric: str,
    *,
    baseline: str = "baseline",
    anchors: Sequence[str] = (),
    lower_is_better: bool = False,
    correction: str = "holm",
    alpha: float = 0.05,
    scale: str | None = None,
    exclude: Sequence[str] = (),
    downstream_metrics: Sequence[str] | None = None,
    power_target: float = 0.8,
) -> Judgement:
    """Judge every arm at `scale` against `baseline` on `metric` (PROTOCOL.md, Statistics).

    `anchors` pool their seed variance into the noise floor; `exclude` leaves arms out of the
    family (other baselines, for instance); `downstream_metrics` is for grading (default: every
    metric whose name does not read as a loss).
    """
    check_correction(correction)
    for name, value in (("alpha", alpha), ("power_target", power_target)):
        if not 0.0 < value < 1.0:
            raise ConfigError(f"{name} must be between 0 and 1, got {value}")
    family = collect_family(
        table,
        metric,
        baseline=baseline,
        anchors=anchors,
        lower_is_better=lower_is_better,
        scale=scale,
        exclude=exclude,
    )
    sigma = family.noise.sigma
    tests = {s.arm: family.compare(s.values) for s in family.arms if s.status == "ok"}
    p_adjusted, verdicts = decide(list(tests.values()), sigma, correction, alpha)
    p_adj = dict(zip(tests, p_adjusted, strict=True))
    verdict = dict(zip(tests, verdicts, strict=True))
    m = len(tests)

    def verdict_of(sample: ArmSample) -> ArmVerdict:
        test = tests.get(sample.arm)
        evidence = grade_arm(
            table,
            sample.arm,
            metric=metric,
            seeds=len(sample.values),
            corrected=correction != "none",
            downstream_metrics=downstream_metrics,
        )
        welch = test.welch if test else None
        return ArmVerdict(
            arm=sample.arm,
            scale=family.scale,
            family=table.family(sample.arm),
            tuned=table.tuned(sample.arm),
            n_seeds=len(sample.values),
            n_diverged=len(sample.diverged),
            diverged_step=min(
                (r.step for r in sample.diverged if r.step is not None), default=None
            ),
            mean=sample.mean,
            sd=test.sd if test else math.nan,
            delta=test.delta if test else math.nan,
            z=test.z if test else math.nan,
            p_z=test.p_z if test else math.nan,
            t=welch.t if welch else math.nan,
            df=welch.df if welch else math.nan,
            p_welch=welch.p if welch else math.nan,
            test=test.test if test else None,
            p=test.p if test else math.nan,
            p_adj=float(p_adj.get(sample.arm, math.nan)),
            verdict=verdict.get(sample.arm, sample.status),
            mde=_mde(family.design(test.n, m, alpha, correction), power_target) * sigma
            if test
            else math.nan,
            grade=evidence.grade,
            grade_missing=evidence.missing,
        )

    arms = tuple(verdict_of(sample) for sample in family.arms)
    return Judgement(
        source=table.source,
        metric=metric,
        scale=family.scale,
        baseline=baseline,
        anchors=tuple(anchors),
        excluded=tuple(exclude),
        lower_is_better=lower_is_better,
        correction=correction,
        alpha=alpha,
        power_target=power_target,
        sigma=sigma,
        sigma_dof=family.noise.dof,
        baseline_mean=family.baseline.mean,
        baseline_n=len(family.baseline.values),
        m=m,
        fwer_uncorrected=fwer_uncorrected(alpha, m),
        arms=arms,
        notes=_notes(table, family, arms, lower_is_better, alpha, correction, m),
    )


@lru_cache(maxsize=256)
def _mde(design: Design, target: float) -> float:
    return minimum_detectable_effect(design, target)


def _notes(
    table: Table,
    family: Family,
    arms: tuple[ArmVerdict, ...],
    lower_is_better: bool,
    alpha: float,
    correction: str,
    m: int,
) -> tuple[str, ...]:
    """Warnings a reader of the verdicts must see."""
    notes = []
    n_base = len(family.baseline.values)
    if n_base < 3:
        notes.append(f"the baseline has {n_base} finished seeds; the protocol asks for 3 or more")
    if family.baseline.diverged or family.baseline.missing:
        notes.append(
            f"baseline runs left out of the noise floor: "
            f"{len(family.baseline.diverged)} diverged, "
            f"{len(family.baseline.missing)} without {family.metric}"
        )
    if any(arm.test == "z" for arm in arms):
        design = family.design(1, m, alpha, correction)
        notes.append(
            f"paper-mode z-tests treat σ as exact; with σ from {family.noise.dof} degrees of "
            f"freedom a single-seed arm with no effect is called significant with probability "
            f"{power(0.0, design):.4f}, not {design.level:.4f} (run more seeds per arm)"
        )
    if not lower_is_better and looks_like_loss(family.metric):
        notes.append(
            f"{family.metric!r} reads as a loss but is judged higher-is-better; "
            "pass lower_is_better (--lower-is-better) if lower is better"
        )
    attention = [arm.arm for arm in arms if arm.family == ATTENTION_OUTPUT]
    if lower_is_better and attention:
        notes.append(
            "R6: attention-output arms can look harmless on loss and lose downstream; "
            "do not rank them by this metric: " + ", ".join(attention)
        )
    tuned = [arm.arm for arm in arms if arm.tuned]
    if tuned:
        notes.append("R1: tuned arms broke the shared recipe: " + ", ".join(tuned))
    if table.tuned(family.baseline.arm):
        notes.append(f"R1: the baseline {family.baseline.arm!r} itself is marked tuned")
    return tuple(notes)
