"""`judge`: every arm's verdict on one metric at one scale, per docs/protocol.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from archaudit.formatting import interval as written_interval
from archaudit.formatting import num
from archaudit.metrics import metric_info
from archaudit.names import Test
from archaudit.stats.choices.compare import ArmTest
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.inference.corrections import (
    ERROR_RATE_NAMES,
    declares,
    error_rate,
    fwer_uncorrected,
)
from archaudit.stats.inference.family_test import interval, leave_one_out
from archaudit.stats.inference.outliers import (
    OUTLIER_MADS,
    OutlierSeed,
    family_scale,
    outlier_seeds,
)
from archaudit.stats.inference.samples import ArmSample
from archaudit.stats.judging.family import Family, collect_family
from archaudit.stats.judging.grading import Grade, caveats, grade_arm, owed
from archaudit.stats.judging.loop import ArmStop, Loop, LoopArm, LoopFamily
from archaudit.stats.judging.signal import AVERAGE, check_signal
from archaudit.stats.records.errors import TableError
from archaudit.stats.records.noise_panel import COVERED_ARM, WIDEST_FACTOR
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import DOWNSTREAM, Table, TableLike, load_table
from archaudit.stats.records.target import TargetPrediction
from archaudit.stats.records.verdicts import NOISE_SIGMAS, Verdict
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.design_rate import DesignRate, arm_mde
from archaudit.stats.simulation.profile import Profile
from archaudit.stats.simulation.sequential import sequential_design_rate, spent_level
from archaudit.stats.tests import statistical_test

SIGMA_RATIO_WARNING = 2.0
"""Warn when σ of one metric differs by more than this factor between scales of one audit."""


@dataclass(frozen=True)
class ArmVerdict(JsonResult):
    """One arm's numbers and verdict. Δ, z and t are signed so that positive = better."""

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("stopped", "caveats", "decided_by")

    arm: str
    metric: str
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
    """Paper-mode z = Δ/σ, shown for comparison. It drives the verdict only in paper mode."""
    p_z: float
    t: float
    """Welch's t (NaN with one seed)."""
    df: float
    p_welch: float
    test: str | None
    """The family's test that drove the verdict: a registered name (stats/tests/:
    "welch", "robust", "pooled-t", "z", "sequential", or a plugin's). None when the arm was not
    tested."""
    statistic: float
    """That test's statistic (t, or z in paper mode)."""
    statistic_df: float
    """Its degrees of freedom (null in JSON for z: infinite)."""
    interval: tuple[float, float]
    """Simultaneous (1 − α) interval for Δ: Bonferroni over the m tested arms (α alone when
    uncorrected), in the test's reference distribution. It excludes 0 exactly when Bonferroni
    rejects. Holm, Hochberg, BH and Dunnett reject at least as much. NaN when not tested."""
    p: float
    p_adj: float
    verdict: Verdict
    mde: float
    """Smallest true effect (metric units) this design detects with the target power."""
    grade: str
    grade_missing: tuple[str, ...]
    owed: tuple[str, ...] = ()
    """The protocol duties that limit its claim on this metric, in words (`grading.owed`: R6
    judged by a loss, R7 at one scale)."""
    outliers: tuple[OutlierSeed, ...] = ()
    """Seeds beyond k robust σ from the arm's other seeds (stats/inference/outliers.py): heavy
    tails."""
    threshold: float = math.nan
    """The level its p is compared with: the family's calibrated α′ for p_adj (fixed design), or
    the loop's last nominal boundary for the last look's p (sequential). NaN when not tested."""
    ratio_bound: float = math.nan
    """Upper 90% bound of its seed σ over σ (NaN with one seed): stats/simulation/profile.py."""
    seed_deltas: tuple[float, ...] = ()
    """Each finished seed's value minus the baseline mean, signed like Δ (the forest's dots)."""
    se: float = math.nan
    """The standard error of the test behind the verdict (NaN when not tested)."""
    loop: LoopArm | None = None
    """The sequential loop's last look at the arm, when the loop judged it (its seeds, Δ, test,
    boundary, verdict and why it stopped): the numbers above are then the loop's."""
    at_target: TargetPrediction | None = None
    """The arm's predicted Δ at the audit's untrained target scale (`stats.predict`), on the
    judgement of the prediction's metric at the largest trained scale; None without one."""
    prior_df: tuple[float, float] = (math.nan, math.nan)
    """(arm's, baseline's) prior degrees of freedom d₀ of the moderated Welch t that decided
    (family_test.moderated_parts; NaN for the other tests)."""
    paper_verdict: Verdict | None = None
    """Paper mode only (`--reference normal`): the verdict the paper's own rule gives (z against
    the nominal corrected α, no calibration), labelled beside the calibrated verdict, which the
    rule's measured error rate (the judgement's `design_fwer`) lowers to nominal when above α."""
    # Other verdicts slot in here as optional fields (default None), e.g. a target-scale
    # prediction or a stability verdict, so every renderer of the record shows them.

    @property
    def decided_by(self) -> dict[str, object] | None:
        """Which statistic, df and p decided the verdict (`statistic`, `statistic_df`, `p`
        and `p_adj`: `t`, `df` and `p_welch` are plain Welch's, shown for comparison only);
        None when the arm was not tested."""
        if self.test is None:
            return None
        return {
            "test": statistical_test(self.test).title,
            "statistic": self.statistic,
            "df": self.statistic_df,
            "p": self.p,
            "p_adj": self.p_adj,
            "prior_df": self.prior_df,
        }

    @property
    def caveats(self) -> tuple[str, ...]:
        """What limits this verdict, in the words every renderer prints (`grading.caveats`)."""
        tied = self.metric if self.delta == 0.0 else None
        return caveats(Grade(self.grade, self.grade_missing), self.owed, self.verdict, tied=tied)

    @property
    def stopped(self) -> ArmStop | None:
        """Sequential only: why the loop stopped giving the arm seeds."""
        return self.loop.stopped if self.loop else None


@dataclass(frozen=True)
class Judgement(JsonResult):
    """The verdicts of all arms against one baseline, with the family's parameters. Its text
    (the header above a verdict table) is `stats.judging.judgement_text`'s."""

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = (
        "baseline", "anchors", "excluded", "reference", "equal_variance", "correction", "alpha",
        "power_target",
    )  # fmt: skip

    source: str
    metric: str
    scale: str
    options: JudgeOptions = field(metadata={"json": False})
    """The options the family was judged under, its scale, direction and exclusions resolved
    (`judge(table, metric, options)` judges it again); the JSON spreads them at the top."""
    lower_is_better: bool
    direction: str
    """E.g. "Δ > 0 means better (lower val_loss is better, declared in the metric registry)"."""
    calibrated: bool
    """False in paper mode: its z-test treats σ as exact."""
    test: str
    """The family's one test: a registered name (stats/tests/)."""
    sigma: float
    sigma_dof: int
    sigma_interval: tuple[float, float]
    """95% chi-square interval of the true σ."""
    sigma_groups: tuple[str, ...]
    """The arms whose seeds were pooled into σ (baseline, anchors, multi-seed arms)."""
    baseline_mean: float
    baseline_n: int
    m: int
    """Number of arms tested (finished, not the baseline): the size of the corrected family."""
    fwer_uncorrected: float
    error_rate: str
    """What the correction controls and `design_fwer` measures: "FWER", or "FDR" for BH."""
    design: DesignRate | None
    """This design's measured family-wise error rate and MDE (None when no arm was tested)."""
    design_fwer: float
    """`design.fwer`, repeated at the top level for readers of the JSON. Measured with every
    arm null, where it is the FWER and, for BH, also its FDR (at its largest there)."""
    design_above_alpha: bool
    design_panel_worst: float
    """The noise panel's worst measured rate for this design (NaN when not simulated)."""
    arms: tuple[ArmVerdict, ...]
    notes: tuple[str, ...]
    baseline_outliers: tuple[OutlierSeed, ...] = ()
    sequential: Loop | None = None
    """The loop this judgement comes from (`judge_loop`); None for a fixed design."""

    level: float = math.nan
    """α′: the calibrated level every p_adj is compared with (stats/simulation/calibrate.py)."""
    profile: str = ""
    """The audit's own profile model its level was also calibrated on ("" when its arms' ratio
    bounds are all within the panel's widest)."""
    covered_factor: float = math.nan
    """The rate holds ≤ α while no arm's seed σ is wider than this many σ (the panel's widest or
    the profile's); single-seed arms are bounded at `single_seed_bound`."""
    widest_ratio: float = math.nan
    """The widest seed σ over σ a multi-seed arm shows here (point estimate; NaN: none)."""
    baseline_ratio: float = math.nan
    """The baseline's seed σ over the other groups' pooled σ (NaN when nothing else pools):
    the rate holds while it is at most `COVERED_BASELINE` (stats/records/noise_panel.py)."""
    single_seed_bound: float = math.nan
    """The factor a single seed's σ is bounded by (∞: no multi-seed arm, candidates only)."""
    mdes: tuple[tuple[int, float], ...] = ()
    """(seeds, MDE in σ) per seed count, at this audit's level and single-seed bound."""

    @property
    def mde(self) -> float:
        """The design's minimum detectable effect in metric units: the sequential design's when
        the loop judged, else the fixed design's (NaN when no arm was tested)."""
        rate = self.sequential.design if self.sequential else self.design
        return rate.mde_sigmas * self.sigma if rate is not None else math.nan

    @property
    def noise_band(self) -> float:
        """NOISE_SIGMAS·σ: effects inside it are within noise by rule."""
        return NOISE_SIGMAS * self.sigma

    @property
    def baseline(self) -> str:
        return self.options.baseline

    @property
    def anchors(self) -> tuple[str, ...]:
        return self.options.anchors

    @property
    def excluded(self) -> tuple[str, ...]:
        """The arms left out of the family (`options.exclude`, and those not in `arms`)."""
        return self.options.exclude

    @property
    def reference(self) -> str:
        """ "t" (calibrated, the default) or "normal" (paper mode)."""
        return self.options.reference

    @property
    def equal_variance(self) -> bool:
        return self.options.equal_variance

    @property
    def correction(self) -> str:
        return self.options.correction

    @property
    def alpha(self) -> float:
        return self.options.alpha

    @property
    def power_target(self) -> float:
        return self.options.power_target

    def arm(self, name: str) -> ArmVerdict:
        """The verdict of one arm."""
        for verdict in self.arms:
            if verdict.arm == name:
                return verdict
        raise KeyError(name)


def judge(table: TableLike, metric: str, options: JudgeOptions = DEFAULT) -> Judgement:
    """Judge every arm at `options.scale` against `options.baseline` on `metric`.

    The rules are in docs/protocol.md (Statistics). Anchors and multi-seed arms pool their seed
    variance into the noise floor. The direction is the metric registry's unless
    `options.lower_is_better` says otherwise.
    """
    table = load_table(table)
    signal = check_signal(table)  # tasks at chance or constant leave downstream_avg
    signal.check_kept(metric, table.metrics)
    table = signal.table
    family = collect_family(table, metric, options)
    tests = {s.arm: family.compare(s.values) for s in family.tested}
    p_adjusted, decided = family.decide(list(tests.values()))
    design = family.audit_design
    rate = family.rate
    robust_scale = family_scale(
        [s.values for s in (family.baseline, *family.anchors, *family.arms)]
    )
    context = _ArmContext(table, family, design, robust_scale)
    adjusted = dict(zip(tests, p_adjusted, strict=True))
    verdict = dict(zip(tests, decided, strict=True))
    rule = family.paper_rule(list(tests.values()))
    paper = dict(zip(tests, rule, strict=True)) if rule else {}
    arms = tuple(
        _arm_verdict(
            sample,
            tests.get(sample.arm),
            float(adjusted.get(sample.arm, math.nan)),
            verdict.get(sample.arm, sample.unjudged),
            context,
        )
        for sample in family.arms
    )
    if paper:
        arms = tuple(replace(a, paper_verdict=paper.get(a.arm)) for a in arms)
    base_outliers = outlier_seeds(family.baseline.values, family.baseline.seeds, robust_scale)
    notes = _notes(table, family, arms, options, rate)
    notes += _demoted(p_adjusted, tests, rate, options, family.level)
    notes += _candidates(arms)
    notes += _untested(arms)
    notes += _outlier_notes(family.baseline.arm, base_outliers, arms)
    notes += _sigma_across_scales(table, metric, family, options)
    notes += (signal.notes if metric == AVERAGE else ()) + signal.r6_notes(
        _owing(table, arms, DOWNSTREAM)
    )
    return _judgement(table, family, options, rate, arms, notes, base_outliers)


def _judgement(
    table: Table,
    family: Family,
    options: JudgeOptions,
    rate: DesignRate | None,
    arms: tuple[ArmVerdict, ...],
    notes: tuple[str, ...],
    baseline_outliers: tuple[OutlierSeed, ...],
) -> Judgement:
    noise = family.noise
    lower = family.sign < 0
    m = len(family.tested)
    judgement = Judgement(
        source=table.source,
        metric=family.metric,
        scale=family.scale,
        options=options.but(
            scale=family.scale, exclude=family.excluded, arms=None, lower_is_better=lower
        ),
        lower_is_better=lower,
        direction=_direction(family.metric, lower, options.lower_is_better is None),
        calibrated=statistical_test(family.test).calibrated,
        test=family.test,
        sigma=noise.sigma,
        sigma_dof=noise.dof,
        sigma_interval=noise.interval,
        sigma_groups=noise.arms,
        baseline_mean=family.baseline.mean,
        baseline_n=len(family.baseline.values),
        m=m,
        fwer_uncorrected=fwer_uncorrected(options.alpha, m),
        error_rate=error_rate(options.correction),
        design=rate,
        design_fwer=rate.fwer if rate else math.nan,
        design_above_alpha=bool(rate and rate.above_alpha),
        design_panel_worst=rate.panel_worst.fwer if rate and rate.panel_worst else math.nan,
        arms=arms,
        notes=notes,
        baseline_outliers=baseline_outliers,
    )
    return _with_calibration(judgement, family, options)


def _with_calibration(judgement: Judgement, family: Family, options: JudgeOptions) -> Judgement:
    """The judgement with its calibrated level, the bounds its rate holds under, and its MDEs at
    that level and bound (stats/simulation/calibrate.py, stats/simulation/profile.py)."""
    level, profile = family.calibrated
    multi = [s for s in family.tested if len(s.values) > 1]
    design = family.audit_design
    bound = family.single_bound
    return replace(
        judgement,
        level=level,
        profile=profile.spec if profile.arms else "",
        covered_factor=max(
            COVERED_ARM,
            profile.factor if profile.arms else WIDEST_FACTOR,
            bound if math.isfinite(bound) else WIDEST_FACTOR,
        ),
        widest_ratio=max(
            (float(np.std(s.values, ddof=1)) / family.noise.sigma for s in multi),
            default=math.nan,
        ),
        baseline_ratio=_baseline_ratio(family),
        single_seed_bound=bound,
        mdes=tuple(
            (n, arm_mde(design, n, options.power_target, level, bound))
            for n in sorted({len(s.values) for s in family.tested})
        )
        if design
        else (),
    )


def _baseline_ratio(family: Family) -> float:
    """The baseline's seed σ over the other groups' pooled σ (the moderated t's prior for the
    baseline: family_test.leave_one_out); NaN when nothing else pools."""
    base = family.baseline.values
    df = len(base) - 1
    prior, _ = leave_one_out(float(np.var(base, ddof=1)), df, family.noise.sigma, family.noise.dof)
    if family.noise.dof <= df or not prior > 0:
        return math.nan
    return float(np.std(base, ddof=1) / np.sqrt(prior))


def judge_loop(fixed: Judgement, family: LoopFamily, loop: Loop) -> Judgement:
    """The sequential loop's verdicts as the one record: `fixed` (`judge` on the same seeds)
    with, for every arm the loop judged, its Δ, last test, repeated interval, boundary, verdict
    and why it stopped, the loop's σ, and its design's measured error rate, level and MDE (none
    of the fixed design's calibration is left in it; its level is lowered by the profile the
    same seeds show, as the loop's looks are: `sequential.look_levels`). Arms the loop did not
    judge keep the fixed design's numbers."""
    design = sequential_design_rate(len(family.arms), loop.rule)
    uncalibrated = not declares(fixed.correction)
    family = family.held_to(design.above_alpha or uncalibrated)  # e.g. written before the rule
    rows = {row.arm: row for row in family.arms}
    mde = design.mde_sigmas * family.sigma
    arms = tuple(
        _loop_verdict(arm, rows[arm.arm], mde, fixed.metric) if arm.arm in rows else arm
        for arm in fixed.arms
    )
    note = (
        "Verdicts from the sequential loop (O'Brien–Fleming alpha spending within each arm, "
        "Holm across arms); p is the last look's, with no single corrected p."
    )
    if family.demoted and uncalibrated:
        note += " " + uncalibrated_note(fixed.correction, family.demoted) + "."
    elif family.demoted:
        note += (
            " This loop's measured error rate is above α, so the arms it declared are reported "
            f"as nominal: {', '.join(family.demoted)}."
        )
    worst = design.panel_worst
    profile = Profile.from_spec(
        fixed.profile
    )  # what the same seeds show (stats/judging/judgement.py)
    return replace(
        fixed,
        sigma=family.sigma,
        sigma_dof=family.sigma_dof,
        test=Test.SEQUENTIAL,
        design=None,
        design_fwer=design.fwer,
        design_above_alpha=design.above_alpha,
        design_panel_worst=worst.fwer if worst else math.nan,
        arms=arms,
        notes=(*fixed.notes, note),
        sequential=replace(loop, design=design),
        level=spent_level(loop.rule, len(family.arms), profile),
        profile=fixed.profile,  # the loop's level is lowered to it too, as α′ is
        covered_factor=profile.factor if profile.arms else WIDEST_FACTOR,
        mdes=(),  # the loop's MDE is its design's (`mde`), not a fixed design's per seed count
    )


def _loop_verdict(arm: ArmVerdict, row: LoopArm, mde: float, metric: str) -> ArmVerdict:
    return replace(
        arm,
        n_seeds=row.seeds,
        delta=row.delta,
        test=Test.SEQUENTIAL,
        statistic=row.t,
        statistic_df=row.df,
        interval=metric_info(metric).within_span(row.interval()),
        p=row.p,
        p_adj=math.nan,
        verdict=row.verdict,
        mde=mde,
        threshold=row.threshold,
        se=row.se,
        loop=row,
        prior_df=(math.nan, math.nan),
    )


@dataclass(frozen=True)
class _ArmContext:
    """What every arm's row of one judgement shares (the metric and options are the family's)."""

    table: Table
    family: Family
    design: AuditDesign | None
    robust_scale: float


def _arm_verdict(
    sample: ArmSample, test: ArmTest | None, p_adj: float, verdict: Verdict, context: _ArmContext
) -> ArmVerdict:
    """One arm's row: its test (None for an arm outside the family, e.g. diverged), its
    corrected p and verdict, its MDE under the design, and its evidence grade."""
    table, family = context.table, context.family
    options = family.options
    evidence = grade_arm(table, sample.arm, options, metric=family.metric, seeds=len(sample.values))
    welch = test.welch if test else None
    bounds = dict(zip((s.arm for s in family.tested), family.ratio_bounds, strict=True))
    # a single seed whose spread nothing bounds has no test: "—", not t 0 and p 1 (no effect)
    tested = test is not None and math.isfinite(test.scale)
    return ArmVerdict(
        arm=sample.arm,
        metric=family.metric,
        scale=family.scale,
        family=table.family(sample.arm),
        tuned=table.tuned(sample.arm),
        n_seeds=len(sample.values),
        n_diverged=len(sample.diverged),
        diverged_step=min((r.step for r in sample.diverged if r.step is not None), default=None),
        mean=sample.mean,
        sd=test.sd if test else math.nan,
        delta=test.delta if test else math.nan,
        z=test.z if test else math.nan,
        p_z=test.p_z if test else math.nan,
        t=welch.t if welch else math.nan,
        df=welch.df if welch else math.nan,
        p_welch=welch.p if welch else math.nan,
        test=test.test if test else None,
        statistic=test.statistic if test and tested else math.nan,
        statistic_df=test.df if test else math.nan,
        interval=metric_info(family.metric).within_span(
            interval(test.delta, test.scale, test.df, options.level(len(family.tested)))
        )
        if test
        else (math.nan, math.nan),
        p=test.p if test and tested else math.nan,
        p_adj=p_adj if tested else math.nan,
        verdict=verdict,
        mde=arm_mde(context.design, test.n, options.power_target, family.level, family.single_bound)
        * family.noise.sigma
        if test and context.design
        else math.nan,
        threshold=family.level if test else math.nan,
        ratio_bound=float(bounds.get(sample.arm, math.nan)),
        grade=evidence.grade,
        grade_missing=evidence.missing,
        owed=owed(table, sample.arm, family.metric, evidence, by_loss=_by_loss(family)),
        outliers=outlier_seeds(sample.values, sample.seeds, context.robust_scale),
        seed_deltas=tuple(float(family.sign * (v - family.baseline.mean)) for v in sample.values),
        se=test.scale if test else math.nan,
        prior_df=test.prior_df if test else (math.nan, math.nan),
    )


def _demoted(
    p_adjusted: np.ndarray,
    tests: dict[str, ArmTest],
    rate: DesignRate | None,
    options: JudgeOptions,
    level: float,
) -> tuple[str, ...]:
    """A note naming the arms a design above α, or an uncalibrated correction, would have
    called significant."""
    names = [arm for arm, p in zip(tests, p_adjusted, strict=True) if p < level]
    if not names:
        return ()
    if not declares(options.correction):
        return (uncalibrated_note(options.correction, names),)
    if not (rate and rate.above_alpha):
        return ()
    return (
        f"at α = {options.alpha} these arms would be significant, but this design's measured "
        f"rate is above α, so they are reported as nominal: {', '.join(names)}",
    )


def uncalibrated_note(correction: str, names: Sequence[str]) -> str:
    """Why arms significant under an uncalibrated correction are reported as nominal."""
    return (
        f"--correction {correction} is not calibrated by simulation (no level α′ holds its rate "
        f"over the noise panel), so no arm is declared: these arms would be significant at α and "
        f"are reported as nominal: {', '.join(names)}; use holm or dunnett for verdicts"
    )


def _untested(arms: tuple[ArmVerdict, ...]) -> tuple[str, ...]:
    """Why a single seed shows no t and p (they print as —)."""
    names = [a.arm for a in arms if a.test is not None and not math.isfinite(a.se)]
    if not names:
        return ()
    return (
        f"no test for {', '.join(names)}: one seed's spread is unbounded when no arm of the "
        "family has two seeds to bound it, so t and p are — (not 0 and 1: that would read as no "
        "effect); run a second seed",
    )


def _candidates(arms: tuple[ArmVerdict, ...]) -> tuple[str, ...]:
    """What a candidate is for, when the table has one."""
    names = [a.arm for a in arms if a.verdict.startswith("candidate-")]
    if not names:
        return ()
    return (
        f"candidate: run its second seed ({', '.join(names)}): one seed is significant only if "
        "its spread is the pool's, and its second seed shows whether it is",
    )


def _owing(table: Table, arms: Sequence[ArmVerdict], duty: str) -> list[str]:
    """The judged arms that owe a protocol duty, as the table's `duties` column says."""
    return [arm.arm for arm in arms if table.owes(arm.arm, duty)]


def _by_loss(family: Family) -> bool:
    """Whether the family is judged as a loss (lower is better, not a downstream score): what
    an arm with a downstream duty must not be ranked by (R6)."""
    return family.sign < 0 and not metric_info(family.metric).downstream


def _outlier_notes(
    baseline: str, base: tuple[OutlierSeed, ...], arms: tuple[ArmVerdict, ...]
) -> tuple[str, ...]:
    """One note naming every seed far outside the rest (heavy tails), if any."""
    found = [(baseline, o) for o in base] + [(a.arm, o) for a in arms for o in a.outliers]
    if not found:
        return ()
    seeds = "; ".join(
        f"{arm} seed {o.seed} ({num(o.value, 4)}, {o.distance:.1f} robust σ from its arm's median)"
        for arm, o in found
    )
    return (
        f"heavy tail: seeds beyond {OUTLIER_MADS:g} robust σ (the family's median within-arm "
        "difference of two seeds / 0.954) from "
        f"the rest: {seeds}; check those runs before trusting a verdict that rests on them",
    )


def _direction(metric: str, lower: bool, from_registry: bool) -> str:
    if not from_registry:
        source = "as given"
    elif metric_info(metric).declared:
        source = "declared in the metric registry"
    else:
        source = "undeclared metric: guessed from its name"
    return f"Δ > 0 means better ({'lower' if lower else 'higher'} {metric} is better, {source})"


def _sigma_across_scales(
    table: Table, metric: str, family: Family, options: JudgeOptions
) -> tuple[str, ...]:
    """A note when σ of this metric differs wildly between the scales of the table."""
    sigmas = {}
    for scale in table.scales:
        try:
            sigmas[scale] = (
                family.noise
                if scale == family.scale
                else collect_family(table, metric, options.but(scale=scale)).noise
            )
        except TableError:
            continue  # a scale without a judgeable baseline has no σ to compare
    if len(sigmas) < 2:
        return ()
    low = min(sigmas, key=lambda s: sigmas[s].sigma)
    high = max(sigmas, key=lambda s: sigmas[s].sigma)
    ratio = sigmas[high].sigma / sigmas[low].sigma
    if ratio <= SIGMA_RATIO_WARNING:
        return ()

    def show(scale: str) -> str:
        noise = sigmas[scale]
        spread = written_interval(noise.interval)
        return f"{num(noise.sigma)} at {scale} (95% {spread}, {noise.dof} df)"

    return (
        f"σ({metric}) differs {ratio:.1f}× between scales: {show(low)} vs {show(high)}; "
        "check that the scales share a recipe, and run more baseline seeds: few seeds leave σ "
        "itself uncertain",
    )


def _notes(
    table: Table,
    family: Family,
    arms: tuple[ArmVerdict, ...],
    options: JudgeOptions,
    rate: DesignRate | None,
) -> tuple[str, ...]:
    """Warnings a reader of the verdicts must see."""
    alpha, correction = options.alpha, options.correction
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
    test = statistical_test(family.test)
    notes += [caveat for caveat in (test.caveat(family.noise.dof),) if caveat]
    if rate and rate.above_alpha:
        notes.append(
            f"this design's measured {ERROR_RATE_NAMES[error_rate(correction)]} "
            f"({rate.describe_rates()}) is above α = {alpha}: its verdicts do not hold at that "
            "level (" + test.above_alpha_advice + ")"
        )
    declared = metric_info(family.metric)
    if options.lower_is_better is not None and options.lower_is_better != declared.lower_is_better:
        notes.append(
            f"{family.metric!r} is {'lower' if declared.lower_is_better else 'higher'}-is-better "
            f"({'declared' if declared.declared else 'read from its name'}) but is judged the "
            "other way, as asked"
        )
    downstream = _owing(table, arms, DOWNSTREAM)
    if downstream and _by_loss(family):
        notes.append(
            "R6: arms with a downstream duty (attention-output changes and those that declare "
            "it) can look harmless on loss and lose downstream; do not rank them by this "
            "metric: " + ", ".join(downstream)
        )
    tuned = [arm.arm for arm in arms if arm.tuned]
    if tuned:
        notes.append("R1: tuned arms broke the shared recipe: " + ", ".join(tuned))
    if table.tuned(family.baseline.arm):
        notes.append(f"R1: the baseline {family.baseline.arm!r} itself is marked tuned")
    return tuple(notes)
