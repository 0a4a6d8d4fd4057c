"""`JudgeOptions`: how a family of arms is judged, checked once where it is built.

Every analysis that judges arms against a baseline (verdicts, decoupling, transfer across scales
and baselines, interactions, aggregate, power, the null simulation) takes one of these instead of
its own copy of a dozen keyword arguments. The CLI's flags are generated from its fields (name,
type, default and the help in each field's metadata), so a bad value is refused with the same
message wherever it enters and no default is written twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from archaudit.errors import ConfigError, did_you_mean
from archaudit.names import BASELINE, Reference
from archaudit.ranges import Range
from archaudit.stats.inference.corrections import check_correction, per_test_alpha
from archaudit.stats.records.serialize import JsonResult


def flag(name: str, help: str, range: Range | None = None) -> dict[str, Any]:
    """A field's command-line flag: the CLI builds the option from the field's name, type,
    default and this (`archaudit.cli.base.options.judge_flags`); a number's `range` is checked where
    the flag is parsed. Every field is a flag on every command that judges a family, unless its
    metadata says `{"flag": False}`."""
    return {"flag": name, "help": help} | ({"range": range} if range is not None else {})


LEVEL = Range(0.0, 1.0, low_open=True, high_open=True)
"""A probability: α, a power target."""


@dataclass(frozen=True)
class JudgeOptions(JsonResult):
    """Which arms form the family, which way is better, and the test that judges them."""

    baseline: str = field(default=BASELINE, metadata=flag("--baseline", "The baseline arm."))
    anchors: tuple[str, ...] = field(
        default=(),
        metadata=flag("--anchor", "Arm pooled into σ without being judged (repeatable)."),
    )
    """Arms whose seeds join the noise floor σ without being judged."""
    lower_is_better: bool | None = field(
        default=None,
        metadata=flag(
            "--lower-is-better/--higher-is-better",
            "Direction of the metric. Default: the metric registry's (docs/metrics.md); a name "
            "nobody declared reads as lower-is-better when it looks like a loss.",
        ),
    )
    """None: the metric registry's direction (`archaudit.metrics`; a loss: lower)."""
    scale: str | None = field(
        default=None, metadata=flag("--scale", "Scale to judge (required with several).")
    )
    """None: the table's only scale (an error when it has several)."""
    exclude: tuple[str, ...] = field(
        default=(), metadata=flag("--exclude", "Leave this arm out of the family (repeatable).")
    )
    """Arms left out of the family (other baselines' arms, a published family of 19 of 20)."""
    arms: tuple[str, ...] | None = field(
        default=None,
        metadata=flag(
            "--arms",
            "Only these arms, by name (repeatable or comma-separated). A count is --n-arms.",
        ),
    )
    """When given, the family is these arms only."""
    reference: str = field(
        default="t",
        metadata=flag(
            "--reference",
            "t (default, calibrated) | normal (paper mode: z-test, UNCALIBRATED, to reproduce "
            "published tables).",
        ),
    )
    """"t" (calibrated, the default) or "normal" (paper mode: σ treated as exact)."""
    equal_variance: bool = field(
        default=False,
        metadata=flag(
            "--equal-variance", "Judge multi-seed arms by the pooled-σ t instead of Welch's."
        ),
    )
    """Judge multi-seed arms by the pooled t instead of Welch's: an assumption of the user."""
    test: str | None = field(
        default=None,
        metadata={
            **flag(
                "--test",
                "A registered statistical test to judge by instead of the one the design "
                "chooses (docs/guides/statistical-test.md).",
            ),
            "json": False,
        },
    )
    """A registered test (stats/tests/) that judges every family instead of the one
    its seeds and `reference`/`equal_variance` choose; None: the design's. Each judgement
    records the test that decided it."""
    correction: str = field(
        default="holm",
        metadata=flag("--correction", "holm | bonferroni | dunnett | bh | none (comparison only)."),
    )
    alpha: float = field(
        default=0.05,
        metadata=flag(
            "--alpha",
            "Significance level: of the family-wise rate (of the FDR with bh).",
            LEVEL,
        ),
    )
    power_target: float = field(
        default=0.8, metadata=flag("--target", "Power to reach (and to quote the MDE at).", LEVEL)
    )
    """The power at which each arm's minimum detectable effect is quoted."""
    downstream_metrics: tuple[str, ...] | None = field(default=None, metadata={"flag": False})
    """The metrics that grade evidence (None: every metric whose name does not read as a loss)."""

    def __post_init__(self) -> None:
        for name in ("anchors", "exclude", "arms", "downstream_metrics"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                if isinstance(value, str):
                    raise ConfigError(f"{name} must be a sequence of arm names, not {value!r}")
                object.__setattr__(self, name, tuple(value))
        if self.baseline in self.exclude:
            raise ConfigError(
                f"--exclude {self.baseline}: the baseline cannot be excluded, every arm is "
                "judged against it; name another baseline with --baseline"
            )
        check_test(self.reference, self.correction, self.alpha)
        check_level("power_target", self.power_target)
        if self.test is not None:  # an unknown name fails here, with did-you-mean
            from archaudit.stats.tests import statistical_test  # scipy: not at start

            statistical_test(self.test)

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
    if reference not in tuple(Reference):
        raise ConfigError(f"unknown reference {reference!r}" + did_you_mean(reference, Reference))
    check_correction(correction)
    check_level("alpha", alpha)
    if reference == "normal" and correction == "dunnett":
        raise ConfigError("dunnett needs the calibrated t reference, not --reference normal")


def check_level(name: str, value: float) -> None:
    """A probability such as α or a power target must lie strictly between 0 and 1."""
    if not 0.0 < value < 1.0:
        raise ConfigError(f"{name} must be between 0 and 1, got {value}")


DEFAULT = JudgeOptions()


def primary_alpha(alpha: float, primaries: int) -> float:
    """One primary metric's share of α when an audit's verdicts stand on `primaries` of them:
    split evenly (Bonferroni), so that the audit as a whole errs at most α. Every path that
    judges, plans or loops over an audit's families asks here."""
    return alpha / max(primaries, 1)
