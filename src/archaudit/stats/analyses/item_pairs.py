"""Every arm paired with the baseline on the benchmark items, at each scale: the analysis of
`archaudit stats items` and of the findings record's `items` slice, as one typed record per
scale (`ItemPairs`), so that the command line only renders it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archaudit.errors import ConfigError
from archaudit.stats.analyses.item_options import CORRECT, ItemOptions
from archaudit.stats.inference.items import load_items
from archaudit.stats.inference.paired import (
    ItemComparison,
    MeasureComparison,
    compare_item_measure,
    compare_items,
)
from archaudit.stats.records.serialize import JsonResult


@dataclass(frozen=True)
class ItemPairs(JsonResult):
    """Every arm against the baseline on the items of one scale."""

    scale: str
    task: str | None
    measure: str
    comparisons: tuple[ItemComparison, ...] | tuple[MeasureComparison, ...]


def pair_items(source: Any, options: ItemOptions) -> tuple[ItemPairs, ...]:
    """Each arm of `source` (an items CSV/Parquet, an audit folder with items.csv, an
    `ItemTable`) paired with the baseline at `options.scale`, or at every scale in turn."""
    items = load_items(source)
    arms = [arm for arm in items.arms if arm != options.baseline]
    if not arms:
        raise ConfigError(
            f"{items.source}: no arm but {options.baseline!r} to compare: nothing to judge"
        )
    if options.scale is not None:
        items.check_scale(options.scale)
    scales = [options.scale] if options.scale else list(items.scales)
    return tuple(_at_scale(items, arms, scale, options) for scale in scales)


def _at_scale(items: Any, arms: list[str], scale: str, options: ItemOptions) -> ItemPairs:
    task, n_boot, seed, base = options.task, options.n_boot, options.seed, options.baseline
    comparisons: tuple[ItemComparison, ...] | tuple[MeasureComparison, ...]
    if options.measure == CORRECT:
        comparisons = tuple(
            compare_items(items, arm, base, scale, task=task, n_boot=n_boot, seed=seed)
            for arm in arms
        )
    else:
        comparisons = tuple(
            compare_item_measure(
                items, arm, base, scale, options.measure, task=task, n_boot=n_boot, seed=seed
            )
            for arm in arms
        )
    return ItemPairs(scale, options.task, options.measure, comparisons)
