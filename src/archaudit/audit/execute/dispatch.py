"""The order a round's runs are handed to the executor: longest first (docs/audit.md).

With two workers, a round whose last run starts late leaves a core idle until it ends; handing
out the long runs first leaves the short ones for the tail (the LPT rule: longest processing
time first). A run's length is the mean training time of its finished siblings (same arm and
scale) in this audit; a run without one gets its training FLOPs over its arm's measured FLOP
rate at another scale (softpick's slower steps), else the audit's, or, before any run finished,
its FLOPs alone (the order is all that counts). Ties keep the plan's order. The local executor
asks again each time a worker is free (`LocalExecutor.order`), so round 1's tail sees the times
of its first runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from archaudit.audit.grid.plan import run_flops
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.grid.store import RunStatus


def longest_first(todo: Sequence[Path], statuses: Sequence[RunStatus]) -> list[Path]:
    """`todo` (paths among `statuses`) sorted by expected seconds, longest first."""
    measured: dict[tuple[str, str], list[float]] = {}
    rates: dict[str, list[float]] = {}  # arm → FLOPs per second of its finished runs
    for status in statuses:
        seconds = _train_seconds(status.result)
        if seconds is not None:
            measured.setdefault((status.spec.arm, status.spec.scale), []).append(seconds)
            rates.setdefault(status.spec.arm, []).append(run_flops(status.spec) / seconds)
    every = [rate for arm_rates in rates.values() for rate in arm_rates]
    overall = statistics.median(every) if every else 1.0
    by_path = {status.path: status for status in statuses}

    def expected(path: Path) -> float:
        spec = by_path[path].spec
        siblings = measured.get((spec.arm, spec.scale))
        if siblings:
            return statistics.fmean(siblings)
        arm_rates = rates.get(spec.arm)
        return run_flops(spec) / (statistics.median(arm_rates) if arm_rates else overall)

    return sorted(todo, key=expected, reverse=True)


def _train_seconds(record: RunRecord | None) -> float | None:
    """A finished run's training seconds (tokens over its measured tokens per second)."""
    if record is None:
        return None
    tokens, speed = record.train.get("tokens"), record.train.get("tokens_per_s")
    return tokens / speed if tokens and speed else None
