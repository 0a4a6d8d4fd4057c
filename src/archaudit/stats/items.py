"""Item-level results: which benchmark items each run got right, for paired comparisons.

A CSV with the columns `arm,scale,seed,task,item,correct` (`correct` is 0 or 1), one row per
run and item. An audit directory is read through `<audit_dir>/items.csv`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from archaudit.stats.errors import DuplicateRowError

ITEM_COLUMNS = ("arm", "scale", "seed", "task", "item", "correct")
ITEMS_FILE = "items.csv"

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


@dataclass(frozen=True)
class ItemTable:
    """Validated item results with a per-run look-up."""

    results: tuple[ItemResult, ...]
    source: str = "<items>"

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
    def _by_run(self) -> dict[tuple[str, str], dict[int, dict[ItemKey, bool]]]:
        runs: dict[tuple[str, str], dict[int, dict[ItemKey, bool]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for result in self.results:
            runs[(result.arm, result.scale)][result.seed][(result.task, result.item)] = (
                result.correct
            )
        return runs

    def to_frame(self) -> Any:
        """One row per (arm, scale, seed, task, item) with `correct` as 0/1."""
        from archaudit.stats.frames import records_frame

        records = [
            {c: getattr(r, c) for c in ITEM_COLUMNS[:-1]} | {"correct": int(r.correct)}
            for r in self.results
        ]
        return records_frame(records, ITEM_COLUMNS)

    @cached_property
    def arms(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(result.arm for result in self.results))

    def answers(
        self, arm: str, scale: str, task: str | None = None
    ) -> dict[int, dict[ItemKey, bool]]:
        """Per seed, each item's correctness; restricted to one task when given."""
        runs = self._by_run.get((arm, scale), {})
        return {
            seed: {key: ok for key, ok in items.items() if task is None or key[0] == task}
            for seed, items in sorted(runs.items())
        }


def load_items(source: str | Path | Any) -> ItemTable:
    """Read an items CSV or Parquet file, `<audit_dir>/items.csv` when given a directory, or a
    pandas DataFrame with the same columns."""
    if isinstance(source, ItemTable):
        return source
    from archaudit.stats.table import source_rows

    cells, name = source_rows(source, ITEMS_FILE, ITEM_COLUMNS, ())
    results = tuple(
        ItemResult(
            arm=cells.text("arm"),
            scale=cells.text("scale"),
            seed=cells.integer("seed"),
            task=cells.text("task"),
            item=cells.text("item"),
            correct=cells.choice("correct", ("0", "1"), default="") == "1",
            line=cells.line,
        )
        for cells in cells
    )
    return ItemTable(results, source=name)
