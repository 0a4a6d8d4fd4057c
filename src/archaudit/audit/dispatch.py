"""The order a round's runs are handed to the executor: longest first (docs/audit.md).

With two workers, a round whose last run starts late leaves a core idle until it ends; handing
out the long runs first leaves the short ones for the tail (the LPT rule: longest processing
time first). A run's length is the mean training time of its finished siblings (same arm and
scale) in this audit; a run without one gets its training FLOPs over the audit's measured
FLOP rate, or, before any run finished, its FLOPs alone (the order is all that counts). Ties keep
the plan's order, so the same directory dispatches the same way.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from archaudit.audit.record import RunRecord
from archaudit.audit.store import RunStatus
from archaudit.audit.stress import run_flops


def longest_first(todo: Sequence[Path], statuses: Sequence[RunStatus]) -> list[Path]:
    """`todo` (paths among `statuses`) sorted by expected seconds, longest first."""
    measured: dict[tuple[str, str], list[float]] = {}
    rates = []
    for status in statuses:
        seconds = _train_seconds(status.result)
        if seconds is not None:
            measured.setdefault((status.spec.arm, status.spec.scale), []).append(seconds)
            rates.append(run_flops(status.spec) / seconds)
    rate = statistics.median(rates) if rates else 1.0
    by_path = {status.path: status for status in statuses}

    def expected(path: Path) -> float:
        spec = by_path[path].spec
        siblings = measured.get((spec.arm, spec.scale))
        return statistics.fmean(siblings) if siblings else run_flops(spec) / rate

    return sorted(todo, key=expected, reverse=True)


def _train_seconds(record: RunRecord | None) -> float | None:
    """A finished run's training seconds (tokens over its measured tokens per second)."""
    if record is None:
        return None
    tokens, speed = record.train.get("tokens"), record.train.get("tokens_per_s")
    return tokens / speed if tokens and speed else None
