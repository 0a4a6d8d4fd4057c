"""The `Findings` record and what it is asked for: every analysis of one source as typed slices
(judgements, transfers, interactions, aggregates, decouplings, power, the prediction and
stability slots, signal-to-noise), what is absent and why, and its flat rows for trackers.
`audit.results.findings.findings` builds it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from archaudit.audit.results.power_cases import PowerCase
from archaudit.audit.results.settings import Settings
from archaudit.audit.results.source import SourceKind
from archaudit.errors import ArchauditError
from archaudit.stats.judging.grading import CAVEAT_SEPARATOR
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.verdicts import Verdict

if TYPE_CHECKING:
    from archaudit.audit.stability.stress_result import StressResult
    from archaudit.stats.analyses.adaptive import SeedingAdvice
    from archaudit.stats.analyses.aggregate import Aggregates
    from archaudit.stats.analyses.baseline_transfer import BaselineTransfer
    from archaudit.stats.analyses.decoupling import Decoupling
    from archaudit.stats.analyses.interactions import Interactions
    from archaudit.stats.analyses.item_pairs import ItemPairs
    from archaudit.stats.analyses.scaling import ScalingFit
    from archaudit.stats.analyses.snr import SignalToNoise
    from archaudit.stats.analyses.transfer import ScaleTransfer
    from archaudit.stats.judging.judgement import ArmVerdict, Judgement
    from archaudit.stats.predictions.predict import Prediction
    from archaudit.stats.records.table import Table

T = TypeVar("T")


class Analysis(StrEnum):
    """The slices of a `Findings` record; each is computed when asked for."""

    VERDICTS = "verdicts"
    TRANSFER = "transfer"
    BASELINES = "baselines"
    INTERACTIONS = "interactions"
    AGGREGATES = "aggregates"
    DECOUPLING = "decoupling"
    POWER = "power"
    SNR = "snr"
    TARGET = "target"
    STRESS = "stress"
    """Read, not computed: the audit's stored stress test (`archaudit stress` computes it)."""
    SCALING = "scaling"
    """The scaling law L(N, D) fitted to one arm's runs (`stats scaling`): on request only."""
    ITEMS = "items"
    """Each arm paired with the baseline on the benchmark items (an audit's items.csv, `stats
    items`): on request only."""
    SEEDING = "seeding"
    """Per fixed-design judgement, whether one more seed could change each verdict (`stats
    power SOURCE`): on request only."""


ON_REQUEST = frozenset({Analysis.SCALING, Analysis.SEEDING, Analysis.ITEMS})
"""The slices computed only when named: a bootstrap of refits or a grid of trial seeds per
arm, which neither the report nor `run` shows."""


@dataclass(frozen=True)
class Asked:
    """What `findings` computes: which analyses, over which scales, with which settings."""

    analyses: frozenset[Analysis] = frozenset(Analysis) - ON_REQUEST
    each_scale: bool | None = None
    """Judge every scale of the table: None = an audit's yes, a CSV's only with one scale (its
    `options.scale` otherwise, or the error that asks for one)."""
    loop: bool = True
    """False: the fixed-design re-analysis of a sequential audit (descriptive only)."""
    partial: bool = False
    """An audit with no finished run gives findings without a table instead of an error."""
    settings: Settings = field(default_factory=Settings)


ASKED = Asked()
"""Every analysis but those `ON_REQUEST`; an audit's every scale, a CSV's one."""
EVERYTHING = Asked(each_scale=True, partial=True)
"""What the report asks for."""
VERDICTS_ONLY = Asked(frozenset({Analysis.VERDICTS}), each_scale=True)
"""What `run`, the demo and the trackers ask for: every family judged."""
JUDGED = frozenset(
    (Analysis.VERDICTS, Analysis.TRANSFER, Analysis.DECOUPLING, Analysis.POWER, Analysis.TARGET)
) | {Analysis.SEEDING}
"""The analyses read from the judgements: asking for one judges every family."""


@dataclass(frozen=True)
class Absence(JsonResult):
    """An analysis (at one place: `metric:scale`, a scale, ...) that could not be made."""

    analysis: Analysis
    where: str
    reason: str


class NotComputed(ArchauditError):
    """Nothing of an asked slice could be computed: the first reason, as the analysis gave it."""


@dataclass(frozen=True)
class VerdictRow(JsonResult):
    """One arm's verdict on one metric at one scale, flat: what trackers log."""

    metric: str
    scale: str
    baseline: str
    arm: str
    verdict: Verdict
    delta: float
    interval_low: float
    interval_high: float
    p_adj: float
    threshold: float
    mde: float
    n_seeds: int
    sequential: bool
    caveats: str
    """What limits the verdict (`ArmVerdict.caveats`), joined by "; "."""

    @classmethod
    def of(cls, j: Judgement, a: ArmVerdict) -> VerdictRow:
        low, high = a.interval
        return cls(
            metric=j.metric, scale=j.scale, baseline=j.baseline, arm=a.arm, verdict=a.verdict,
            delta=a.delta, interval_low=low, interval_high=high, p_adj=a.p_adj,
            threshold=a.threshold, mde=a.mde, n_seeds=a.n_seeds,
            sequential=j.sequential is not None, caveats=CAVEAT_SEPARATOR.join(a.caveats),
        )  # fmt: skip


DEPTH_LOSS_MEASURE = "final loss rise with depth (ΔD)"
"""The depth-sensitivity test's one measure, named as the other tests name theirs."""


@dataclass(frozen=True)
class StabilityRow(JsonResult):
    """One arm's stability verdict from the audit's stored stress test, flat, in the shape of a
    `VerdictRow` where it can be (trackers tag both alike)."""

    metric: str
    """Which declared test: `stability/rates` (the rate sweep), `stability/depth` (the runs at
    the deeper models), `stability/depth-loss` (the depth sensitivity ΔD) or
    `stability/logits` (the attention logits and |log Z| at the upper rates)."""
    scale: str
    baseline: str
    arm: str
    verdict: str
    p_adj: float
    measure: str

    @classmethod
    def of(cls, result: StressResult) -> tuple[StabilityRow, ...]:
        def p(value: float | None) -> float:
            return math.nan if value is None else value

        rates = tuple(
            cls("stability/rates", result.scale, v.baseline, v.arm, v.verdict,
                p(v.p_primary_adjusted), v.primary_measure)
            for v in result.verdicts
        )  # fmt: skip
        depth = tuple(
            cls(
                "stability/depth",
                result.scale,
                v.baseline,
                v.arm,
                v.verdict,
                p(v.p_adjusted),
                v.measure,
            )
            for v in result.depth_verdicts
        )
        loss = tuple(
            cls("stability/depth-loss", result.scale, v.baseline, v.arm, v.verdict,
                p(v.p_adjusted), DEPTH_LOSS_MEASURE)
            for v in result.depth_sensitivity
        )  # fmt: skip
        logits = tuple(
            cls("stability/logits", result.scale, v.baseline, v.arm, v.verdict,
                p(v.p_adjusted), v.measure)
            for v in result.logit_verdicts
        )  # fmt: skip
        return rates + depth + loss + logits

    def line(self) -> str:
        p = "" if math.isnan(self.p_adj) else f", p_adj {self.p_adj:.3g}"
        return f"{self.arm} {self.verdict} over {self.metric.removeprefix('stability/')}{p}"


@dataclass(frozen=True)
class Findings(JsonResult):
    """Every analysis of one source, with what is absent and why."""

    source: str
    kind: SourceKind
    metrics: tuple[str, ...]
    scales: tuple[str, ...]
    defaults: tuple[str, ...]
    """What an audit folder chose where the caller named nothing ("metrics val_loss, ...")."""
    judgements: tuple[Judgement, ...] = ()
    transfers: tuple[ScaleTransfer, ...] = ()
    baseline_transfers: tuple[BaselineTransfer, ...] = ()
    interactions: tuple[Interactions, ...] = ()
    aggregates: tuple[Aggregates, ...] = ()
    decouplings: tuple[Decoupling, ...] = ()
    power: tuple[PowerCase, ...] = ()
    prediction: Prediction | None = None
    """Each arm at the audit's untrained [target] scale (a slot `stats.predictions` fills)."""
    stability: StressResult | None = None
    """The audit's stored stress test (`archaudit stress`): each arm's stability verdicts over
    rates and depth, beside the verdicts on the metrics."""
    snr: SignalToNoise | None = None
    scaling: ScalingFit | None = None
    """The scaling law fitted to `Settings.scaling.arm`'s runs (asked for by name only)."""
    seeding: tuple[SeedingAdvice, ...] = ()
    """Per fixed-design judgement: could one more seed change each arm's verdict?"""
    items: tuple[ItemPairs, ...] = ()
    """Per scale: each arm paired with the baseline on the audit's benchmark items."""
    absent: tuple[Absence, ...] = ()
    notes: tuple[str, ...] = ()
    """What a reader of every slice must know (unfinished runs, a loop not finished)."""
    audit_dir: Path | None = field(default=None, metadata={"json": False})
    results_path: Path | None = field(default=None, metadata={"json": False})
    """The results file read (an audit's: its results.csv export)."""
    table: Table | None = field(default=None, metadata={"json": False})

    def why(self, *analyses: Analysis) -> str | None:
        """The recorded reason the first of `analyses` could not be made, if one is."""
        for analysis in analyses:
            for absence in self.absent:
                if absence.analysis == analysis:
                    return absence.reason
        return None

    def require(self, analysis: Analysis, found: Sequence[Any] | None) -> None:
        """Refuse (one line) when an asked slice came out empty, with the analysis' reason."""
        if not found:
            # A slice read from the judgements is empty where no family could be judged: then
            # the judging's reason is the slice's (a misspelled --anchor, an unknown metric).
            judging = self.why(Analysis.VERDICTS) if analysis in JUDGED else None
            why = self.why(analysis) or judging
            raise NotComputed(why or f"{self.source}: no {analysis} to show")

    def judgement(self, metric: str, scale: str) -> Judgement | None:
        return next((j for j in self.judgements if (j.metric, j.scale) == (metric, scale)), None)

    def rows(self) -> tuple[VerdictRow, ...]:
        """One row per (metric, scale, baseline, arm): its verdict and the numbers beside it."""
        return tuple(VerdictRow.of(j, a) for j in self.judgements for a in j.arms)

    def stability_rows(self) -> tuple[StabilityRow, ...]:
        """The stored stress test's verdicts, one row per arm and stress (none without one)."""
        return StabilityRow.of(self.stability) if self.stability else ()

    def to_frame(self) -> Any:
        """`rows()` as a DataFrame with pandas' nullable dtypes."""
        from archaudit.stats.records.frames import typed_frame

        return typed_frame([r.to_dict() for r in self.rows()])


def attempt(
    compute: Callable[..., T], analysis: Analysis, where: str, absent: list[Absence]
) -> T | None:
    """The analysis' result, or None with the user-facing reason it gave recorded as absent.

    `compute` is called with no arguments; its type says `...` because callers' lambdas bind
    their loop variables as default arguments, which mypy cannot infer."""
    try:
        return compute()
    except ArchauditError as err:
        absent.append(Absence(analysis, where, str(err)))
        return None
