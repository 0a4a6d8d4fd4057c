"""`archaudit stats scaling SOURCE`: the scaling law the findings record fits (its `scaling`
slice, `audit.results.findings`), rendered."""

from __future__ import annotations

from typing import Annotated

from archaudit.cli.base.options import Flags, output_flags, with_flags
from archaudit.cli.stats.common import (
    Source,
    findings_of,
    print_notes,
    print_rows,
    printed_json,
    stats_app,
)
from archaudit.formatting import interval
from archaudit.stats.analyses.scaling import ScalingOptions
from archaudit.stats.choices.options import DEFAULT


@stats_app.command("scaling")
@output_flags
@with_flags
def scaling_command(
    source: Source,
    fit: Annotated[ScalingOptions, Flags(ScalingOptions)],
    json_: bool = False,
) -> None:
    """Fit L(N, D) = E + A/N^α + B/D^β with bootstrap intervals; optimal N, D for a budget."""
    from archaudit.audit.results.findings import Analysis, Settings

    found = findings_of(
        source,
        fit.loss_metric,
        DEFAULT,
        Analysis.SCALING,
        each_scale=True,
        settings=Settings(scaling=fit),
    )
    result = found.scaling
    found.require(Analysis.SCALING, [result] if result else [])
    assert result is not None  # `require` refused an empty slice
    if printed_json(result, json_):
        return
    values = result.surface.to_dict() | {"n_opt": result.n_opt, "d_opt": result.d_opt}
    print_rows(
        f"{fit.arm}: {result.loss_metric} over {result.n_points} runs, {result.n_boot} "
        "bootstrap refits",
        ("parameter", "estimate", "95% interval"),
        [(name, values[name], interval(bounds)) for name, bounds in result.intervals.items()],
    )
    print_notes(list(result.notes))
