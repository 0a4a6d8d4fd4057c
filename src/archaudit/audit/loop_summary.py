"""The sequential loop's summary read back as records, and the one verdict record of a family
it judged (`judge_with_loop`): what `stats`, the report and the trackers show.

The loop (`archaudit.audit.sequential`) writes `sequential/summary.json` when it stops; this
module only reads it, so every reader goes through one typed reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from archaudit.audit import store
from archaudit.stats.judge import Judgement, judge, judge_loop
from archaudit.stats.loop import Loop, LoopArm, LoopFamily
from archaudit.stats.options import JudgeOptions
from archaudit.stats.simulation.sequential import SequentialRule
from archaudit.stats.table import Table


def read_summary(audit_dir: Path) -> dict[str, Any] | None:
    """The last finished sequential loop's summary as JSON (None before it finished once)."""
    return store.read_json(audit_dir / store.SEQUENTIAL_DIR / store.SEQUENTIAL_SUMMARY)


@dataclass(frozen=True)
class LoopSummary:
    """The verdicts of the last finished loop as its summary keeps them: what `run` printed
    and what `stats` and the report show (through `judge_with_loop`)."""

    loop: Loop
    families: tuple[LoopFamily, ...]

    def family(self, metric: str, scale: str, baseline: str) -> LoopFamily | None:
        """The family the loop judged on `metric` at `scale` against `baseline`, if any."""
        return next(
            (
                f
                for f in self.families
                if (f.metric, f.scale, f.baseline) == (metric, scale, baseline)
            ),
            None,
        )


def read_loop_summary(audit_dir: Path) -> LoopSummary | None:
    """The summary as records (None before the loop finished once, or for a summary of a loop
    too old to have written its rule)."""
    summary = read_summary(audit_dir)
    if not summary or "rule" not in summary:
        return None
    families = tuple(
        LoopFamily(**{**f, "arms": tuple(LoopArm(**arm) for arm in f["arms"])})
        for f in summary["families"]
    )
    rule = SequentialRule(**summary["rule"])
    loop = Loop(summary["rounds"], summary["runs"], summary["stop"], rule)
    return LoopSummary(loop, families)


def judge_with_loop(
    table: Table,
    metric: str,
    options: JudgeOptions,
    loop: LoopSummary | None,
    primaries: Sequence[str] = (),
) -> Judgement:
    """The one verdict record of a family: the loop's when the sequential loop judged it
    (`judge_loop`), else the fixed design's (`judge`), with α split over the audit's
    `primaries` (`primary_family`)."""
    options, note = primary_family(options, metric, primaries)
    fixed = judge(table, metric, options)
    family = loop.family(metric, fixed.scale, fixed.baseline) if loop else None
    judged = judge_loop(fixed, family, loop.loop) if family and loop else fixed
    return replace(judged, notes=(*judged.notes, note)) if note else judged


def primary_family(
    options: JudgeOptions, metric: str, primaries: Sequence[str]
) -> tuple[JudgeOptions, str]:
    """(the options `metric` is judged under, the note that says so). The audit's primary
    metrics are one family: each is judged at α/k (Bonferroni over the k primaries, as the
    sequential loop splits α), so the audit, not each metric, errs at most α (two metrics at
    the single-metric α′ declared in 0.078 of null 2×2/b3 audits with both arms 6× wide). A
    metric outside the primaries keeps α and is labelled exploratory."""
    if not primaries:
        return options, ""
    if metric not in primaries:
        return options, (
            f"{metric} is exploratory (not one of the audit's primary metrics: "
            f"{', '.join(primaries)}): its verdicts are outside the family's α"
        )
    if len(primaries) == 1:
        return options, ""
    split = options.alpha / len(primaries)
    return options.but(alpha=split), (
        f"α = {options.alpha:g} split over {len(primaries)} primary metrics "
        f"({', '.join(primaries)}): {metric} is judged at α = {split:g}"
    )
