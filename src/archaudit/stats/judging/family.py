"""A family of arms judged against one baseline: its samples, noise floor, test and design.

`collect_family` gathers it from a table. `judge` (verdicts), `adaptive_seeding` (one more seed),
the analyses (transfer, interactions) and `simulate-null --like` (`family_design`) all start here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from archaudit.errors import ConfigError
from archaudit.metrics import lower_is_better
from archaudit.names import ResultStatus
from archaudit.stats.choices.compare import ArmTest, compare_arm, decide
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.inference.corrections import declares
from archaudit.stats.inference.family_test import choose_test
from archaudit.stats.inference.noise import NoiseFloor, noise_floor
from archaudit.stats.inference.samples import ArmSample, sample_arm
from archaudit.stats.records.table import Table
from archaudit.stats.records.verdicts import Verdict, nominal
from archaudit.stats.simulation.calibrate import audit_level
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.design_rate import DesignRate, design_rate
from archaudit.stats.simulation.profile import NO_PROFILE, Profile, ratio_bounds, single_seed_bound
from archaudit.stats.tests import statistical_test


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
    anchors: tuple[ArmSample, ...]
    test: str
    """The family's one test (family_test.choose_test)."""
    options: JudgeOptions
    """What chose the family and its test."""
    excluded: tuple[str, ...] = ()
    """The arms left out of the family (`options.exclude`, and those not in `options.arms`)."""

    @classmethod
    def build(
        cls,
        metric: str,
        floor: Sequence[ArmSample],
        arms: tuple[ArmSample, ...],
        sign: float,
        options: JudgeOptions,
        excluded: tuple[str, ...] = (),
    ) -> Family:
        """The family, with σ pooled over the baseline, the anchors (`floor`) and the tested
        multi-seed arms, and the one test that judges it."""
        anchors = {sample.arm for sample in floor}
        tested = [s for s in arms if s.status == ResultStatus.OK]
        return cls(
            metric=metric,
            scale=floor[0].scale,
            baseline=floor[0],
            noise=noise_floor(
                floor, metric, pooled_arms=[s for s in tested if s.arm not in anchors]
            ),
            sign=sign,
            arms=arms,
            anchors=tuple(floor[1:]),
            test=choose_test(
                [len(s.values) for s in tested],
                reference=options.reference,
                equal_variance=options.equal_variance,
                correction=options.correction,
                test=options.test,
            ),
            options=options,
            excluded=excluded,
        )

    def grown(self, arm: str, values: np.ndarray) -> Family:
        """The same family with `arm`'s seeds replaced by `values` (σ and test recomputed)."""
        arms = tuple(replace(s, values=values) if s.arm == arm else s for s in self.arms)
        floor = (self.baseline, *self.anchors)
        return Family.build(self.metric, floor, arms, self.sign, self.options, self.excluded)

    @property
    def tested(self) -> tuple[ArmSample, ...]:
        """The arms that finished every seed: the corrected family."""
        return tuple(sample for sample in self.arms if sample.status == ResultStatus.OK)

    @cached_property
    def ratio_bounds(self) -> np.ndarray:
        """Each tested arm's upper bound on its seed σ over σ (NaN with one seed)."""
        seeds = np.array([len(s.values) for s in self.tested])
        var = np.array(
            [np.var(s.values, ddof=1) if len(s.values) > 1 else 0.0 for s in self.tested]
        )
        return ratio_bounds(var, self.noise.sigma, seeds, self.noise.dof)

    @property
    def single_bound(self) -> float:
        """The factor a single seed's σ is bounded by (∞: no multi-seed arm bounds it)."""
        return float(single_seed_bound(self.ratio_bounds[None, :])[0])

    @cached_property
    def calibrated(self) -> tuple[float, Profile]:
        """(α′, the profile model it was calibrated on as well): stats/simulation/calibrate.py."""
        design = self.audit_design
        if design is None:
            return self.options.alpha, NO_PROFILE
        return audit_level(design, self.ratio_bounds)

    @property
    def level(self) -> float:
        return self.calibrated[0]

    def compare(self, values: np.ndarray) -> ArmTest:
        """Test an arm's seed values against the baseline."""
        return compare_arm(
            values, self.baseline.values, self.noise, self.sign, self.test, self.single_bound
        )

    def decide(self, tests: Sequence[ArmTest]) -> tuple[np.ndarray, list[Verdict]]:
        """(corrected p, verdict) of each tested arm, corrected together as the options say and
        compared with the family's calibrated level; nothing is significant under a design
        whose measured rate is above α or under an uncalibrated correction (BH, none: its
        verdicts are nominal)."""
        p, verdicts = decide(tests, self.noise, len(self.baseline.values), self.options, self.level)
        if self.above_alpha or not declares(self.options.correction):
            verdicts = [nominal(v) for v in verdicts]
        return p, verdicts

    def paper_rule(self, tests: Sequence[ArmTest]) -> list[Verdict]:
        """Paper mode only: each tested arm's verdict by the paper's rule (z, corrected, at the
        nominal α), before a measured rate above α lowers it; empty otherwise."""
        if not statistical_test(self.test).reproduces_paper:
            return []
        options = self.options
        return decide(tests, self.noise, len(self.baseline.values), options, options.alpha)[1]

    @cached_property
    def rate(self) -> DesignRate | None:
        """The design's measured error rates and MDE (None when no arm can be tested)."""
        design = self.audit_design
        return design_rate(design, power_target=self.options.power_target) if design else None

    @property
    def above_alpha(self) -> bool:
        return bool(self.rate and self.rate.above_alpha)

    @cached_property
    def audit_design(self) -> AuditDesign | None:
        """The design of the tested family under its options (None when no arm can be tested);
        built once per family (its level, rate and MDEs all read it)."""
        if not self.tested:
            return None
        tested = {s.arm for s in self.tested}
        return AuditDesign.judged_by(
            self.options,
            arm_seeds=[len(s.values) for s in self.tested],
            baseline_seeds=len(self.baseline.values),
            anchor_seeds=[len(s.values) for s in self.anchors if s.arm not in tested],
        )


def collect_family(table: Table, metric: str, options: JudgeOptions = DEFAULT) -> Family:
    """Check the names, then gather the baseline, noise floor and arm samples at one scale.

    The family is every arm at `options.scale` but the baseline and the excluded arms.
    """
    table.check_metric(metric)
    scale = table.resolve_scale(options.scale)
    table.check_arm(options.baseline, "baseline")
    for anchor in options.anchors:
        table.check_arm(anchor, "anchor")
    for arm in options.exclude:
        table.check_arm(arm, "excluded arm")
    excluded = left_out(table, options)
    floor = [sample_arm(table, metric, scale, arm) for arm in (options.baseline, *options.anchors)]
    samples = tuple(
        sample_arm(table, metric, scale, arm)
        for arm in table.arms_at(scale)
        if arm != options.baseline and arm not in excluded
    )
    sign = -1.0 if lower_is_better(metric, options.lower_is_better) else 1.0
    return Family.build(metric, floor, samples, sign, options, excluded)


def family_design(table: Table, metric: str, options: JudgeOptions = DEFAULT) -> AuditDesign:
    """The design `judge` would judge this table's family under (for `simulate-null --like`)."""
    design = collect_family(table, metric, options).audit_design
    if design is None:
        raise ConfigError(f"{table.source}: no arm of {metric!r} finished every seed; no design")
    return design


def left_out(table: Table, options: JudgeOptions) -> tuple[str, ...]:
    """`options.exclude`, plus every arm not in `options.arms` when the family is given by them."""
    if options.arms is None:
        return options.exclude
    for arm in options.arms:
        table.check_arm(arm)
    scale = table.resolve_scale(options.scale)
    named = (*options.arms, options.baseline)
    return (*options.exclude, *(a for a in table.arms_at(scale) if a not in named))


def no_arm_to_judge(table: Table, options: JudgeOptions) -> ConfigError:
    """The error for a family of no arm (an empty verdict table says nothing), naming the arms
    that other scales hold: two scale labels for one model size is the usual cause."""
    scale = table.resolve_scale(options.scale)
    elsewhere = [
        f"{arm} at {other}"
        for other in table.scales
        if other != scale
        for arm in table.arms_at(other)
        if arm != options.baseline
    ]
    hint = (
        f"; other scales hold {', '.join(elsewhere[:4])}: give runs of one model size one "
        "scale label"
        if elsewhere
        else "; add arms, or check --arms and --exclude"
    )
    return ConfigError(
        f"{table.source}: no arm to judge against {options.baseline!r} at scale {scale!r}{hint}"
    )
