"""A family of arms judged against one baseline: its samples, noise floor, test and design.

`collect_family` gathers it from a table. `judge` (verdicts), `adaptive_seeding` (one more seed),
the analyses (transfer, interactions) and `simulate-null --like` (`family_design`) all start here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from archaudit.errors import ConfigError
from archaudit.metrics import lower_is_better
from archaudit.stats.compare import ArmTest, compare_arm, decide
from archaudit.stats.design import AuditDesign
from archaudit.stats.family_test import choose_test
from archaudit.stats.noise import NoiseFloor, noise_floor
from archaudit.stats.options import DEFAULT, JudgeOptions
from archaudit.stats.samples import ArmSample, sample_arm
from archaudit.stats.table import Table


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
        tested = [s for s in arms if s.status == "ok"]
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
        return tuple(sample for sample in self.arms if sample.status == "ok")

    def compare(self, values: np.ndarray) -> ArmTest:
        """Test an arm's seed values against the baseline."""
        return compare_arm(values, self.baseline.values, self.noise, self.sign, self.test)

    def decide(self, tests: Sequence[ArmTest]) -> tuple[np.ndarray, list[str]]:
        """(corrected p, verdict) of each tested arm, corrected together as the options say."""
        return decide(tests, self.noise, len(self.baseline.values), self.options)

    def audit_design(self) -> AuditDesign | None:
        """The design of the tested family under its options (None when no arm can be tested)."""
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
    design = collect_family(table, metric, options).audit_design()
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
