"""Downstream tasks that carry no signal in an audit, decided once for every analysis.

The eval side flags a task in each run (`<task>/at_chance` = 1 when its score's 95% interval
reaches chance or the floor, `archaudit.evals.tasks`). Here the audit decides: a task is
uninformative when every run that scored it flags it, or when its score is the same in every
run (agreement exactly 0.43 everywhere). An uninformative task

- leaves `downstream_avg`, which is recomputed for every run over the informative tasks alike
  (a run's own average left out only the tasks that run flagged, so runs would not compare);
  when no task is left, `downstream_avg` is dropped and judging it says why;
- loses its accuracy rows, so it cannot count toward the grade's downstream criterion;
- cannot satisfy R6: arms with a downstream duty (the table's `duties` column) get a note when
  no downstream task is informative.

Its gold bits per byte (`<task>/bpb`, continuous) stays: it carries signal where accuracy
cannot. A table without per-task rows (a CSV from elsewhere) passes through unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from archaudit.metrics import downstream_average
from archaudit.names import ResultStatus
from archaudit.stats.records.errors import TableError
from archaudit.stats.records.table import Row, Table

SCORE, FLAG, KEPT = "/score", "/at_chance", ("/bpb",)
AVERAGE = "downstream_avg"
ALWAYS_AT_CHANCE = "at chance or at the floor in every run"


@dataclass(frozen=True)
class SignalCheck:
    table: Table
    """The table to judge: downstream_avg over informative tasks, uninformative rows dropped."""
    uninformative: dict[str, str]
    """{task: why}, e.g. "at chance or at the floor in every run"."""
    informative: tuple[str, ...]

    @property
    def notes(self) -> tuple[str, ...]:
        if not self.uninformative:
            return ()
        listed = "; ".join(f"{task} ({why})" for task, why in self.uninformative.items())
        kept = ", ".join(self.informative) or "none"
        return (
            f"{AVERAGE} leaves out tasks that carry no signal in this audit: {listed}; "
            f"it averages {kept}",
        )

    def r6_notes(self, downstream_arms: list[str]) -> tuple[str, ...]:
        """R6 cannot be met by tasks that carry no signal."""
        if self.informative or not self.uninformative or not downstream_arms:
            return ()
        return (
            "R6 not met: no downstream task carries signal in this audit (every one at chance, "
            "at the floor or constant), so the arms with a downstream duty have no downstream "
            "evidence: " + ", ".join(downstream_arms),
        )

    def check_kept(self, metric: str, before: tuple[str, ...]) -> None:
        """Refuse, naming why, a `metric` of the table (`before`: its metrics) that this check
        left out: `downstream_avg` with no informative task, or a task's metric at chance."""
        if metric not in before or metric in self.table.metrics:
            return
        if metric == AVERAGE:
            raise self.missing_average()
        task = metric.rpartition("/")[0]
        if task in self.uninformative:
            raise self.at_chance(metric, task)

    def at_chance(self, metric: str, task: str) -> TableError:
        kept = [m for m in self.table.metrics if m.startswith(task + "/")]
        instead = f"judge {' or '.join(kept)}" if kept else "judge another metric"
        return TableError(
            self.table.source,
            f"metric {metric!r} is at chance or constant: its task {task!r} carries no signal "
            f"in this audit ({self.uninformative[task]}), so its rows are left out of judging",
            f"{instead}, or train longer or larger",
        )

    def missing_average(self) -> TableError:
        return TableError(
            self.table.source,
            f"{AVERAGE} has no informative task to average ({'; '.join(self.uninformative)} "
            "carry no signal: at chance, at the floor or constant in every run)",
            "judge downstream_bpb or a per-task bpb, or train longer or larger",
        )


def check_signal(table: Table) -> SignalCheck:
    """Decide which downstream tasks carry signal and rebuild the table accordingly."""
    tasks = [m[: -len(SCORE)] for m in table.metrics if m.endswith(SCORE)]
    uninformative = {t: why for t in tasks if (why := _uninformative(table, t))}
    informative = tuple(t for t in tasks if t not in uninformative)
    if not tasks:
        return SignalCheck(table, {}, ())
    rows = [r for r in table.rows if r.metric != AVERAGE and not _dropped(r, uninformative)]
    if informative:
        rows += _averages(table, informative)
    return SignalCheck(Table(tuple(rows), table.source), uninformative, informative)


def _uninformative(table: Table, task: str) -> str:
    scores = [
        r.value for r in table.rows if r.metric == task + SCORE and r.status == ResultStatus.OK
    ]
    scores = [v for v in scores if math.isfinite(v)]
    flags = [r.value for r in table.rows if r.metric == task + FLAG and math.isfinite(r.value)]
    if flags and all(flag >= 0.5 for flag in flags):
        return ALWAYS_AT_CHANCE
    if len(scores) >= 2 and max(scores) - min(scores) <= 1e-12:
        return f"the same score {scores[0]:.4g} in every run"
    return ""


def _dropped(row: Row, uninformative: dict[str, str]) -> bool:
    task, _, _ = row.metric.rpartition("/")
    return task in uninformative and not row.metric.endswith(KEPT)


def _averages(table: Table, tasks: tuple[str, ...]) -> list[Row]:
    """One downstream_avg row per run: the mean of its informative tasks' scores."""
    scores: dict[tuple[str, str, int], dict[str, Row]] = {}
    for row in table.rows:
        if row.metric.endswith(SCORE) and row.metric[: -len(SCORE)] in tasks:
            scores.setdefault((row.arm, row.scale, row.seed), {})[row.metric] = row
    rows = []
    for by_task in scores.values():
        first = next(iter(by_task.values()))
        values = {t: by_task[t + SCORE].value for t in tasks if t + SCORE in by_task}
        rows.append(replace(first, metric=AVERAGE, value=downstream_average(values, tasks), line=0))
    return rows
