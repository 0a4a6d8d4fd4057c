"""Item-level results: which benchmark items each run got right, for paired comparisons.

A CSV with the columns `arm,scale,seed,task,item,correct` (`correct` is 0 or 1), one row per
run and item, and optionally the continuous measures `bpb` (bits per byte of the gold
continuation) and `margin` (log-probability of the best true choice minus the best wrong one),
empty where a task has none (cloze items have no margin; files from before these columns load
without them). An audit directory is read through `<audit_dir>/items.csv`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from archaudit.errors import ConfigError, did_you_mean
from archaudit.names import ITEMS_FILE
from archaudit.stats.records.errors import DataError, DuplicateRowError

ITEM_COLUMNS = ("arm", "scale", "seed", "task", "item", "correct")
ITEM_DTYPES = {
    "arm": "string", "scale": "string", "seed": "Int64", "task": "string", "item": "string",
    "correct": "Int64",
}  # fmt: skip
"""Each column's pandas dtype in `Items.to_frame` (and items.parquet), as the CSV reads it."""
ITEM_MEASURES: tuple[str, ...] = ("bpb", "margin")
"""Optional per-item continuous columns (NaN where a task has none)."""

ItemKey = tuple[str, str]
"""(task, item): what makes two runs' answers comparable."""


@dataclass(frozen=True, slots=True)
class ItemResult:
    """Whether one run answered one benchmark item correctly."""

    arm: str
    scale: str
    seed: int
    task: str
    item: str
    correct: bool
    line: int = 0
    bpb: float = math.nan
    margin: float = math.nan

    def measure(self, name: str) -> float:
        """`correct` as 0/1, or a continuous measure (NaN when not recorded)."""
        return float(getattr(self, name))


@dataclass(frozen=True)
class ItemTable:
    """Validated item results with a per-run look-up."""

    results: tuple[ItemResult, ...]
    source: str = "<items>"
    measures: tuple[str, ...] = ITEM_MEASURES
    """The optional measure columns the source has (an old items.csv has none)."""

    def __post_init__(self) -> None:
        seen: dict[tuple[str, str, int, str, str], ItemResult] = {}
        for result in self.results:
            key = (result.arm, result.scale, result.seed, result.task, result.item)
            first = seen.setdefault(key, result)
            if first is not result:
                raise DuplicateRowError(
                    f"{self.source}:{result.line}",
                    f"item {result.task}/{result.item} appears twice for arm={result.arm!r} "
                    f"scale={result.scale!r} seed={result.seed} (first at line {first.line})",
                    "keep one row per (arm, scale, seed, task, item)",
                )

    @cached_property
    def _by_run(self) -> dict[tuple[str, str], dict[int, dict[ItemKey, ItemResult]]]:
        runs: dict[tuple[str, str], dict[int, dict[ItemKey, ItemResult]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for result in self.results:
            runs[(result.arm, result.scale)][result.seed][(result.task, result.item)] = result
        return runs

    @property
    def scales(self) -> tuple[str, ...]:
        return tuple(sorted({r.scale for r in self.results}))

    def check_scale(self, scale: str) -> None:
        """A one-line refusal naming the scales the items have."""
        if scale not in self.scales:
            raise ConfigError(
                f"{self.source}: no items at scale {scale!r}"
                f"{did_you_mean(scale, self.scales)}; the items' scales: {', '.join(self.scales)}"
            )

    def to_frame(self) -> Any:
        """One row per (arm, scale, seed, task, item) with `correct` as 0/1 and the measure
        columns the source has (NaN where an item has none)."""
        from archaudit.stats.records.frames import declared_frame

        dtypes = ITEM_DTYPES | dict.fromkeys(self.measures, "float64")
        records = [
            {c: getattr(r, c) for c in dtypes} | {"correct": int(r.correct)} for r in self.results
        ]
        return declared_frame(records, dtypes)

    @cached_property
    def arms(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(result.arm for result in self.results))

    def answers(
        self, arm: str, scale: str, task: str | None = None
    ) -> dict[int, dict[ItemKey, bool]]:
        """Per seed, each item's correctness; restricted to one task when given."""
        return {
            seed: {key: bool(value) for key, value in items.items()}
            for seed, items in self.values(arm, scale, "correct", task).items()
        }

    def values(
        self, arm: str, scale: str, measure: str, task: str | None = None
    ) -> dict[int, dict[ItemKey, float]]:
        """Per seed, each item's `measure` (NaN where not recorded); one task when given."""
        if measure != "correct" and measure not in self.measures:
            raise DataError(
                f"{self.source}: no column {measure!r} (item files from before per-item measures, "
                "and lm-eval imports, have none); re-export an audit with `archaudit status "
                "AUDIT_DIR`, or use --measure correct"
            )
        runs = self._by_run.get((arm, scale), {})
        return {
            seed: {
                key: result.measure(measure)
                for key, result in items.items()
                if task is None or key[0] == task
            }
            for seed, items in sorted(runs.items())
        }


def load_items(source: str | Path | Any) -> ItemTable:
    """Read an items CSV or Parquet file, `<audit_dir>/items.csv` when given a directory, or a
    pandas DataFrame with the same columns."""
    if isinstance(source, ItemTable):
        return source
    from archaudit.stats.records.table import source_rows

    rows, name = source_rows(source, ITEMS_FILE, ITEM_COLUMNS, ITEM_MEASURES)
    results, measures = [], ITEM_MEASURES
    for cells in rows:
        measures = tuple(m for m in ITEM_MEASURES if m in cells.cells)
        results.append(
            ItemResult(
                arm=cells.text("arm"),
                scale=cells.text("scale"),
                seed=cells.integer("seed"),
                task=cells.text("task"),
                item=cells.text("item"),
                correct=cells.choice("correct", ("0", "1"), default="") == "1",
                line=cells.line,
                bpb=cells.number("bpb"),
                margin=cells.number("margin"),
            )
        )
    return ItemTable(tuple(results), source=name, measures=measures)
