"""Evidence grading (A–D) of a claim about an arm, from the five criteria of docs/protocol.md.

docs/protocol.md defines grade A: >= 3 seeds, downstream evaluation, >= 2 scales, a shared recipe
and a corrected test. Below A we count what is missing: one criterion → B, two → C, more → D.
A tuned arm lacks "shared recipe", so it can never be graded A.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from archaudit.metrics import Kind, metric_info
from archaudit.names import ResultStatus
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.records.table import Duty, Row, Table
from archaudit.stats.records.verdicts import CANDIDATE_IMPROVER, CANDIDATE_REGRESSOR

SEEDS = "3+ seeds"
DOWNSTREAM = "downstream evaluation"
SCALES = "2+ scales"
SHARED_RECIPE = "shared recipe"
CORRECTED = "corrected test"
CRITERIA = (SEEDS, DOWNSTREAM, SCALES, SHARED_RECIPE, CORRECTED)
GRADES = "ABCD"


@dataclass(frozen=True, slots=True)
class Grade:
    """The grade and the criteria the claim does not meet."""

    grade: str
    missing: tuple[str, ...]

    @property
    def text(self) -> str:
        """ "A", or "B (missing: 2+ scales)": how every renderer writes the grade."""
        return self.grade + (f" (missing: {', '.join(self.missing)})" if self.missing else "")


def grade(*, seeds: int, downstream: bool, scales: int, tuned: bool, corrected: bool) -> Grade:
    """Grade one claim from its evidence."""
    met = {
        SEEDS: seeds >= 3,
        DOWNSTREAM: downstream,
        SCALES: scales >= 2,
        SHARED_RECIPE: not tuned,
        CORRECTED: corrected,
    }
    missing = tuple(name for name in CRITERIA if not met[name])
    return Grade(grade=GRADES[min(len(missing), len(GRADES) - 1)], missing=missing)


def _reads_as_downstream(metric: str) -> bool:
    """A higher-is-better downstream measurement (`archaudit.metrics`): no loss, count, flag."""
    info = metric_info(metric)
    return info.downstream and info.higher_is_better and info.kind is Kind.MEASURE


def grade_arm(table: Table, arm: str, options: JudgeOptions, *, metric: str, seeds: int) -> Grade:
    """Grade an arm's claim on `metric` with `seeds` finished seeds at the judged scale.

    The test counts as corrected unless `options.correction` is "none". Downstream evaluation
    means a finite value for any of `options.downstream_metrics`. By default that is every
    higher-is-better downstream measurement of the metric registry. Tasks
    without signal are out of the table by then (`archaudit.stats.judging.signal`). Scales count
    where
    the arm has a finite `metric`. A downstream number the arm's own run scored at chance or at
    the floor (its `<task>/at_chance` flag; for an average, every task of the run flagged) is
    no evidence either: an arm whose downstream scores sit at the floor is never graded A.
    """
    downstream_names = set(
        options.downstream_metrics
        if options.downstream_metrics is not None
        else (name for name in table.metrics if _reads_as_downstream(name))
    )
    finite = [
        row
        for row in table.rows_of(arm)
        if row.status == ResultStatus.OK and not math.isnan(row.value)
    ]
    above = _above_chance(finite)
    return grade(
        seeds=seeds,
        downstream=any(row.metric in downstream_names and above(row) for row in finite),
        scales=len({row.scale for row in finite if row.metric == metric}),
        tuned=table.tuned(arm),
        corrected=options.correction != "none",
    )


AT_CHANCE = "/at_chance"


def _above_chance(rows: list[Row]) -> Callable[[Row], bool]:
    """Whether a run's downstream number is above chance by the flags the eval wrote for that
    run: a task's by its own flag, an average when any task of the run is unflagged. A run
    without flags (a CSV from elsewhere) keeps its numbers."""
    flags: dict[tuple[str, int], dict[str, bool]] = defaultdict(dict)
    for row in rows:
        if row.metric.endswith(AT_CHANCE):
            flags[(row.scale, row.seed)][row.metric[: -len(AT_CHANCE)]] = row.value >= 0.5

    def above(row: Row) -> bool:
        run = flags.get((row.scale, row.seed))
        if not run:
            return True
        task = row.metric.rpartition("/")[0]
        return not run.get(task, False) if task else not all(run.values())

    return above


R6_CAVEAT = "R6: rank it by downstream scores, not by {metric}"
"""An arm with a downstream duty judged on a loss (docs/protocol.md R6)."""
R7_CAVEAT = "R7: one scale, and it owes a second"
"""An arm with a cross-scale duty judged at one scale (docs/protocol.md R7)."""
CANDIDATE_CAVEAT = "candidate: one seed, its second seed decides"
TIED_CAVEAT = "Δ exactly 0: its seeds score the baseline's, so {metric} cannot tell them apart"
"""A degenerate comparison (post_ln's downstream_avg in the demo: every task at its floor)."""
CAVEAT_SEPARATOR = "; "
"""Joins caveats where one cell or line holds them."""


def owed(table: Table, arm: str, metric: str, evidence: Grade, *, by_loss: bool) -> tuple[str, ...]:
    """The protocol duties that limit the arm's claim on `metric`, in words: R6 when the arm
    owes a downstream evaluation and `metric` is judged as a loss (`by_loss`), R7 when it owes a
    second scale and has one."""
    r6 = by_loss and table.owes(arm, Duty.DOWNSTREAM)
    r7 = SCALES in evidence.missing and table.owes(arm, Duty.CROSS_SCALE)
    return (R6_CAVEAT.format(metric=metric),) * r6 + (R7_CAVEAT,) * r7


def caveats(
    evidence: Grade, duties: tuple[str, ...], verdict: str, *, tied: str | None = None
) -> tuple[str, ...]:
    """What limits one verdict, in the words every renderer prints (the console's `stats`, the
    JSON, the report's answer and detail table, its Markdown twin): the grade below A with what
    it misses, the duties the arm owes (`owed`), a candidate's missing second seed, and a Δ of
    exactly 0 on the metric `tied` names (its t 0 and p 1 say nothing of the arm: the metric
    does not separate the runs)."""
    graded = (f"grade {evidence.text}",) if evidence.missing else ()
    candidate = (CANDIDATE_CAVEAT,) * (verdict in (CANDIDATE_IMPROVER, CANDIDATE_REGRESSOR))
    same = (TIED_CAVEAT.format(metric=tied),) if tied else ()
    return (*graded, *duties, *candidate, *same)
