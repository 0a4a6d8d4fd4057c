"""`archaudit stats aggregate`: rliable's aggregates and deep-significance's ASO over tasks.

archaudit stats aggregate SOURCE [--metric TASK ...] [--scale S] [--json]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from archaudit.audit.results.settings import AggregateSettings
from archaudit.cli.base.options import Flags, judge_flags, output_flags
from archaudit.cli.stats.common import (
    Source,
    findings_of,
    print_notes,
    print_rows,
    show,
    stats_app,
)
from archaudit.formatting import counted, interval
from archaudit.stats.choices.options import DEFAULT, JudgeOptions

if TYPE_CHECKING:
    from archaudit.stats.analyses.aggregate import Aggregates


@stats_app.command("aggregate")
@output_flags
@judge_flags("baseline", "scale", "lower_is_better", "exclude", "arms")
def aggregate_command(
    source: Source,
    options: JudgeOptions = DEFAULT,
    *,
    tasks: Annotated[AggregateSettings, Flags(AggregateSettings)],
    json_: bool = False,
) -> None:
    """IQM and macro mean with stratified-bootstrap intervals, P(arm > baseline), and almost
    stochastic order, over tasks × seeds (rliable's and deep-significance's definitions)."""
    from archaudit.audit.results.findings import Analysis, Settings

    settings = Settings(aggregates=tasks)
    found = findings_of(source, (), options, Analysis.AGGREGATES, settings=settings)
    show(found, Analysis.AGGREGATES, found.aggregates, json_, _print_aggregate, scales_only=True)


def _print_aggregate(result: Aggregates) -> None:
    level = f"{result.confidence:.0%}"
    print_rows(
        f"{counted(len(result.tasks), 'task')} at {result.scale} against {result.baseline}; "
        f"{level} stratified-bootstrap intervals ({result.n_boot} replicates, seed {result.seed})",
        (
            "arm",
            "seeds",
            "mean",
            f"{level} interval",
            "IQM",
            f"{level} interval",
            "P(> baseline)",
            f"{level} interval",
            "ASO ε_min",
            "ASO",
        ),
        [
            (
                a.arm,
                a.n_seeds,
                a.mean,
                interval(a.mean_interval),
                a.iqm,
                interval(a.iqm_interval),
                a.prob_improvement,
                interval(a.prob_improvement_interval),
                a.aso_eps_min,
                a.aso,
            )
            for a in result.arms
        ],
    )
    print_notes(
        [
            f"ASO: ε_min < {result.aso_threshold} means almost stochastically better, on each "
            f"seed's macro average (Bonferroni over {result.aso_comparisons} comparison(s))",
            *result.notes,
        ]
    )
