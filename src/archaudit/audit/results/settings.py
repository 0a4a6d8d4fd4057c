"""What the analyses beyond the verdicts run with: one record per analysis, each field a flag of
the command that shows it (`cli.base.options`: the option rule). Light to import: the command
line reads these records to build its flags before anything is judged."""

from __future__ import annotations

from dataclasses import dataclass, field

from archaudit.ranges import REPLICATES, SEED, Range
from archaudit.stats.analyses.item_options import ItemOptions
from archaudit.stats.analyses.scaling import ScalingOptions

LEVEL = Range(0.0, 1.0, low_open=True, high_open=True)
"""A coverage or a threshold strictly between 0 and 1."""


@dataclass(frozen=True, kw_only=True)
class TransferSettings:
    """Cross-scale transfer: which two scales, and the rank intervals' coverage."""

    small: str | None = field(default=None, metadata={"flag": "--from"})
    """Smaller scale (default: the smallest)."""
    large: str | None = field(default=None, metadata={"flag": "--to"})
    """Larger scale (default: the largest)."""
    confidence: float = field(default=0.95, metadata={"range": LEVEL})
    """Coverage of the intervals: a level in (0, 1)."""


@dataclass(frozen=True, kw_only=True)
class InteractionSettings:
    """A factorial audit's interactions."""

    separator: str = field(default="+", metadata={"flag": "--sep"})
    """Joins choices in arm names."""


@dataclass(frozen=True, kw_only=True)
class DecouplingSettings:
    """Loss against downstream: the two metrics (None: the first judged loss, and the first
    judged metric that is not a loss) and the equivalence margin."""

    loss_metric: str | None = None
    """The loss (lower is better)."""
    downstream_metric: str | None = None
    """The downstream metric (higher is better)."""
    margin: float | None = field(default=None, metadata={"range": Range(0.0, low_open=True)})
    """Equivalence margin in noise floors σ: a metric is flat when its interval lies within
    ±margin (TOST). Default: each arm's MDE."""


@dataclass(frozen=True, kw_only=True)
class AggregateSettings:
    """Aggregates over tasks: which task metrics, and the stratified bootstrap."""

    task_metrics: tuple[str, ...] = field(default=(), metadata={"flag": "--metric"})
    """Task metric, one stratum (repeatable). Default: every <task>/score."""
    n_boot: int = field(default=2000, metadata={"range": REPLICATES})
    """Bootstrap replicates."""
    seed: int = field(default=0, metadata={"range": SEED})
    """Seed of the bootstrap's draws."""
    confidence: float = field(default=0.95, metadata={"range": LEVEL})
    """Coverage of the intervals: a level in (0, 1)."""
    aso_threshold: float = field(default=0.2, metadata={"range": LEVEL})
    """τ: ε_min below it decides the ASO."""


@dataclass(frozen=True)
class Settings:
    """How the analyses beyond the verdicts run: one record per analysis, each field of which
    is a flag of the command that shows it (each default is the analysis' own)."""

    transfer: TransferSettings = field(default_factory=TransferSettings)
    baselines: tuple[str, ...] = ()
    """Transfer across these baselines (an audit's own when it has several)."""
    interactions: InteractionSettings = field(default_factory=InteractionSettings)
    decoupling: DecouplingSettings = field(default_factory=DecouplingSettings)
    aggregates: AggregateSettings = field(default_factory=AggregateSettings)
    scaling: ScalingOptions = field(default_factory=ScalingOptions)
    """Which arm's runs the scaling law is fitted to, and how."""
    items: ItemOptions = field(default_factory=ItemOptions)
    """Which arms are paired on the benchmark items, and how."""
