"""`archaudit stats interactions SOURCE`: a factorial audit's interactions, from the findings
record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from archaudit.audit.results.settings import InteractionSettings
from archaudit.cli.base.options import (
    Flags,
    judge_flags,
    output_flags,
)
from archaudit.cli.stats.common import (
    OptMetric,
    Source,
    findings_of,
    print_rows,
    show,
    stats_app,
)
from archaudit.formatting import num
from archaudit.stats.choices.options import DEFAULT, JudgeOptions

if TYPE_CHECKING:
    from archaudit.stats.analyses.interactions import Interactions


@stats_app.command("interactions")
@output_flags
@judge_flags()
def interactions_command(
    source: Source,
    metric: OptMetric = None,
    options: JudgeOptions = DEFAULT,
    *,
    factorial: Annotated[InteractionSettings, Flags(InteractionSettings)],
    json_: bool = False,
) -> None:
    """Factorial interactions (observed vs additive) and the harmful-count regression; on an
    audit folder without --metric or --scale, each primary metric at each scale."""
    from archaudit.audit.results.findings import Analysis, Settings

    found = findings_of(
        source, metric, options, Analysis.INTERACTIONS, settings=Settings(interactions=factorial)
    )
    show(found, Analysis.INTERACTIONS, found.interactions, json_, _print_interactions)


def _print_interactions(result: Interactions) -> None:
    metric = result.metric
    print_rows(
        f"{metric} at {result.scale}: R² additive {num(result.r2_additive)}, R² harmful count "
        f"{num(result.r2_harmful_count)} (harmful: {', '.join(result.harmful) or 'none'})",
        ("arm", "seeds", "observed", "additive", "interaction", "in σ", "harmful"),
        [
            (
                c.arm,
                c.n_seeds,
                c.observed,
                c.predicted,
                c.interaction,
                c.interaction_sigmas,
                c.harmful_count,
            )
            for c in result.combinations
        ],
    )
