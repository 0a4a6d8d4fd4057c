"""The sequential loop's options (`archaudit.audit.execute.sequential`), apart from the loop: the
command line builds its flags from them when it starts, before the loop (and scipy) is
imported."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from archaudit.errors import ConfigError
from archaudit.ranges import Range


@dataclass(frozen=True, kw_only=True)
class SettleOptions:
    max_seeds: int = 5
    budget_runs: int | None = field(default=None, metadata={"range": Range(1)})
    """The most runs of the whole audit (first round included)."""
    budget_hours: float | None = field(default=None, metadata={"range": Range(0, low_open=True)})
    """No new round starts after this many hours of this coordinator."""
    metrics: tuple[str, ...] = ()
    """Primary metrics ("" = seeds.primary, else val_loss and downstream_avg with a suite)."""
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if self.max_seeds < 1:
            raise ConfigError(f"--max-seeds {self.max_seeds} must be >= 1")
        if self.budget_runs is not None and self.budget_runs < 1:
            raise ConfigError(f"--budget-runs {self.budget_runs} must be >= 1")
        if self.budget_hours is not None and not 0 < self.budget_hours < math.inf:
            raise ConfigError(f"--budget-hours {self.budget_hours} must be > 0 and finite")
