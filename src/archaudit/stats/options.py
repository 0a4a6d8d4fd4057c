"""`JudgeOptions`: how a family of arms is judged, checked once where it is built.

Every analysis that judges arms against a baseline (verdicts, decoupling, transfer across scales
and baselines, interactions, aggregate, power, the null simulation) takes one of these instead of
its own copy of a dozen keyword arguments. The CLI builds it from its flags, so a bad value is
refused with the same message wherever it enters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from archaudit.errors import ConfigError
from archaudit.stats.corrections import check_correction, per_test_alpha
from archaudit.stats.family_test import check_reference
from archaudit.stats.serialize import JsonResult


@dataclass(frozen=True)
class JudgeOptions(JsonResult):
    """Which arms form the family, which way is better, and the test that judges them."""

    baseline: str = "baseline"
    anchors: tuple[str, ...] = ()
    """Arms whose seeds join the noise floor σ without being judged."""
    lower_is_better: bool | None = None
    """None: the metric registry's direction (`archaudit.metrics`; a loss: lower)."""
    scale: str | None = None
    """None: the table's only scale (an error when it has several)."""
    exclude: tuple[str, ...] = ()
    """Arms left out of the family (other baselines' arms, a published family of 19 of 20)."""
    arms: tuple[str, ...] | None = None
    """When given, the family is these arms only."""
    reference: str = "t"
    """"t" (calibrated, the default) or "normal" (paper mode: σ treated as exact)."""
    equal_variance: bool = False
    """Judge multi-seed arms by the pooled t instead of Welch's: an assumption of the user."""
    correction: str = "holm"
    alpha: float = 0.05
    power_target: float = 0.8
    """The power at which each arm's minimum detectable effect is quoted."""
    downstream_metrics: tuple[str, ...] | None = None
    """The metrics that grade evidence (None: every metric whose name does not read as a loss)."""

    def __post_init__(self) -> None:
        for name in ("anchors", "exclude", "arms", "downstream_metrics"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                if isinstance(value, str):
                    raise ConfigError(f"{name} must be a sequence of arm names, not {value!r}")
                object.__setattr__(self, name, tuple(value))
        check_test(self.reference, self.correction, self.alpha)
        check_level("power_target", self.power_target)

    def but(self, **changes: Any) -> JudgeOptions:
        """A copy with `changes` (checked again): `options.but(scale="m", correction="none")`."""
        return replace(self, **changes)

    def level(self, m: int) -> float:
        """The per-arm level of a simultaneous interval over `m` arms (α alone uncorrected)."""
        return per_test_alpha(self.alpha, m, self.correction)


def check_test(reference: str, correction: str, alpha: float) -> None:
    """Refuse what no test can run with: an unknown reference or correction, an α outside (0, 1),
    or Dunnett in paper mode.

    `JudgeOptions` and the design records (`AuditDesign`, `power.Design`) all check here.
    """
    check_reference(reference)
    check_correction(correction)
    check_level("alpha", alpha)
    if reference == "normal" and correction == "dunnett":
        raise ConfigError("dunnett needs the calibrated t reference, not --reference normal")


def check_level(name: str, value: float) -> None:
    """A probability such as α or a power target must lie strictly between 0 and 1."""
    if not 0.0 < value < 1.0:
        raise ConfigError(f"{name} must be between 0 and 1, got {value}")


DEFAULT = JudgeOptions()


def judge_options(
    *,
    arms: Sequence[str] | None = None,
    anchors: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    **fields: Any,
) -> JudgeOptions:
    """Options from CLI-style values, where an unset repeatable flag arrives as None."""
    return JudgeOptions(
        arms=tuple(arms) if arms else None,
        anchors=tuple(anchors or ()),
        exclude=tuple(exclude or ()),
        **fields,
    )
