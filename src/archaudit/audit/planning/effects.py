"""`PlannedEffects`: what `plan` assumes of the effects it quotes power and runs for
(`--sigma`, `--effects`), checked where it is built and against the plan's arms."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from archaudit.audit.grid.plan import MAX_ARM_ENTRIES, Plan
from archaudit.errors import ConfigError
from archaudit.names import BASELINE
from archaudit.ranges import Range


@dataclass(frozen=True, kw_only=True)
class PlannedEffects:
    sigma: float | None = field(default=None, metadata={"range": Range(0, low_open=True)})
    """Seed σ of the primary metric: MDEs are also quoted in its units, and --effects is read
    in them."""
    effects: tuple[float, ...] = ()
    """Planted effects for the sequential estimate, one per arm of a family, the first arms
    first (e.g. 3,3,8; in σ, in metric units with --sigma). Default: a pilot's, else null."""

    def __post_init__(self) -> None:
        if self.sigma is not None and not 0 < self.sigma < math.inf:
            raise ConfigError(f"--sigma {self.sigma}: a seed σ is a positive, finite number")
        if not all(math.isfinite(e) for e in self.effects):
            raise ConfigError(f"--effects {list(self.effects)}: every effect must be finite")
        if len(self.effects) > MAX_ARM_ENTRIES:
            raise ConfigError(f"--effects has {len(self.effects):,} values; at most one per arm")

    def check(self, plan: Plan) -> PlannedEffects:
        """Itself, when every effect has an arm to be planted on (extra ones would be ignored)."""
        arms: dict[tuple[str, str], set[str]] = {}
        for run in plan.runs:
            if run.mods != BASELINE:
                arms.setdefault((run.baseline, run.scale), set()).add(run.arm)
        most = max(map(len, arms.values()), default=0)
        if len(self.effects) > most:
            raise ConfigError(
                f"--effects gives {len(self.effects)} effects, but a family of this audit has at "
                f"most {most} arm{'s' * (most != 1)} to plant them on (one per arm)"
            )
        return self
