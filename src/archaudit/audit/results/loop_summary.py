"""The sequential loop's summary read back as records, and the one verdict record of a family
it judged (`judge_with_loop`): what `stats`, the report and the trackers show.

The loop (`archaudit.audit.execute.sequential`) writes `sequential/summary.json` when it stops; this
module only reads it, so every reader goes through one typed reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archaudit.audit.grid import store
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.judging.judgement import Judgement, judge, judge_loop
from archaudit.stats.judging.loop import Loop, LoopArm, LoopFamily
from archaudit.stats.records.table import Table
from archaudit.stats.simulation.sequential import SequentialRule


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
        LoopFamily(
            **{**f, "arms": tuple(LoopArm(**arm) for arm in f["arms"])}
            | {"demoted": tuple(f.get("demoted", ()))}
        )
        for f in summary["families"]
    )
    rule = SequentialRule(**summary["rule"])
    loop = Loop(summary["rounds"], summary["runs"], summary["stop"], rule)
    return LoopSummary(loop, families)


def judge_with_loop(
    table: Table, metric: str, options: JudgeOptions, loop: LoopSummary | None
) -> Judgement:
    """The one verdict record of a family: the loop's when the sequential loop judged it
    (`judge_loop`), else the fixed design's (`judge`)."""
    fixed = judge(table, metric, options)
    family = loop.family(metric, fixed.scale, fixed.baseline) if loop else None
    return judge_loop(fixed, family, loop.loop) if family and loop else fixed


def loop_notes(
    audit_dir: Path | None, loop: LoopSummary | None, metrics: Sequence[str]
) -> tuple[str, ...]:
    """What a reader of a sequential audit's verdicts must know: the loop has not finished (the
    verdicts are fixed-design and descriptive), or it did not judge one of `metrics`."""
    if audit_dir is None or not (audit_dir / store.SEQUENTIAL_DIR).is_dir():
        return ()
    if loop is None:
        return (
            "the sequential loop has not finished: these fixed-design verdicts ignore its looks "
            "and are descriptive only",
        )
    judged = sorted({f"{f.metric} at {f.scale}" for f in loop.families})
    return tuple(
        f"{metric} was not judged by the sequential loop ({', '.join(judged)}): these are "
        "fixed-design verdicts on the seeds the loop chose"
        for metric in metrics
        if all(f.metric != metric for f in loop.families)
    )
