"""The design of one judged family: what its error rate and power depend on, and nothing else.

Two tables with the same design (seeds per arm, baseline and anchor seeds, test, correction, α)
have the same family-wise error rate and minimum detectable effect, whatever their values, so a
design is the key under which `design_rate` caches its simulation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from archaudit.errors import ConfigError
from archaudit.stats.choices.options import DEFAULT, JudgeOptions, check_test
from archaudit.stats.inference.family_test import choose_test
from archaudit.stats.records.noise_panel import WIDEST_FACTOR
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.simulation.power import Design, default_baseline_seeds
from archaudit.stats.tests import statistical_test


@dataclass(frozen=True)
class AuditDesign(JsonResult):
    """A family of arms judged against one baseline (σ pooled over every multi-seed group)."""

    arm_seeds: tuple[int, ...]
    """Seeds of each tested arm (sorted, so that equal designs compare equal)."""
    baseline_seeds: int
    anchor_seeds: tuple[int, ...] = ()
    """Seeds of each anchor arm pooled into σ (not tested)."""
    reference: str = "t"
    equal_variance: bool = False
    correction: str = "holm"
    alpha: float = 0.05
    family_test: str | None = field(default=None, metadata={"json": False})
    """A registered test the user chose (`JudgeOptions.test`); None: the one the seeds choose.
    Out of the JSON fields, so a default design's cache key is what it always was; `to_dict`
    adds it when set."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "arm_seeds", tuple(sorted(self.arm_seeds)))
        object.__setattr__(self, "anchor_seeds", tuple(sorted(self.anchor_seeds)))
        check_test(self.reference, self.correction, self.alpha)
        if not self.arm_seeds or min(self.arm_seeds) < 1:
            raise ConfigError(f"a design needs >= 1 arm with >= 1 seed; got {self.arm_seeds}")
        if self.baseline_seeds < 2 or min(self.anchor_seeds, default=2) < 2:
            raise ConfigError(
                f"the baseline and each anchor need >= 2 seeds; got {self.baseline_seeds} and "
                f"{self.anchor_seeds}"
            )

    @classmethod
    def judged_by(
        cls,
        options: JudgeOptions,
        arm_seeds: Sequence[int],
        baseline_seeds: int,
        anchor_seeds: Sequence[int] = (),
    ) -> AuditDesign:
        """The design of a family with these seeds, judged by the test `options` choose."""
        return cls(
            arm_seeds=tuple(arm_seeds),
            baseline_seeds=baseline_seeds,
            anchor_seeds=tuple(anchor_seeds),
            reference=options.reference,
            equal_variance=options.equal_variance,
            correction=options.correction,
            alpha=options.alpha,
            family_test=options.test,
        )

    @classmethod
    def balanced(
        cls,
        n_arms: int,
        seeds: int,
        baseline_seeds: int | None = None,
        options: JudgeOptions = DEFAULT,
    ) -> AuditDesign:
        """`n_arms` arms of `seeds` seeds each. The baseline runs `baseline_seeds`, by default
        as many as each arm, at least 3 (the protocol's noise floor)."""
        if n_arms < 1:
            raise ConfigError(f"a design needs >= 1 arm; got --n-arms {n_arms}")
        return cls.judged_by(
            options, (seeds,) * n_arms, baseline_seeds or default_baseline_seeds(seeds)
        )

    @property
    def m(self) -> int:
        return len(self.arm_seeds)

    @property
    def test(self) -> str:
        return choose_test(
            self.arm_seeds,
            reference=self.reference,
            equal_variance=self.equal_variance,
            correction=self.correction,
            test=self.family_test,
        )

    @property
    def calibrated(self) -> bool:
        return statistical_test(self.test).calibrated

    def to_dict(self) -> dict[str, Any]:
        """The JSON fields (a simulation's cache key), with `family_test` when one was chosen."""
        fields = super().to_dict()
        if self.family_test is not None:
            fields["family_test"] = self.family_test
        return fields

    @property
    def sigma_dof(self) -> int:
        """Σ(nᵢ − 1) over the baseline, the anchors and the arms with >= 2 seeds."""
        groups = (self.baseline_seeds, *self.anchor_seeds, *self.arm_seeds)
        return sum(n - 1 for n in groups)

    def arm(self, seeds: int, level: float | None = None, bound: float = WIDEST_FACTOR) -> Design:
        """The power design of one arm of this family with `seeds` seeds, tested at `level`
        (the calibrated α′; None: α) and, with one seed, its σ bounded at `bound`."""
        return Design(
            arm_seeds=seeds,
            baseline_seeds=self.baseline_seeds,
            n_arms=self.m,
            alpha=self.alpha if level is None else level,
            single_bound=bound,
            correction=self.correction,
            sigma_dof=self.sigma_dof,
            family_test=self.test,
        )

    def describe(self) -> str:
        """E.g. "19 arms × 1 seed, baseline 3 seeds, pooled-t, holm at α = 0.05"."""
        counts = Counter(self.arm_seeds)
        arms = " + ".join(
            f"{count} arm{'s' * (count > 1)} × {seeds} seed{'s' * (seeds > 1)}"
            for seeds, count in sorted(counts.items())
        )
        anchors = f", anchors {list(self.anchor_seeds)} seeds" if self.anchor_seeds else ""
        return (
            f"{arms}, baseline {self.baseline_seeds} seeds{anchors}, {self.test} test "
            f"(σ with {self.sigma_dof} df), {self.correction} at α = {self.alpha}"
        )
