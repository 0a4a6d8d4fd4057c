"""`archaudit stats snr`: each metric's seed noise against the spread between arms.

archaudit stats snr SOURCE [--metric NAME ...] [--baseline B] [--json]
"""

from __future__ import annotations

from typing import Annotated

import typer

from archaudit.cli.base.options import judge_flags, output_flags
from archaudit.cli.stats.common import (
    Source,
    findings_of,
    print_notes,
    print_rows,
    printed_json,
    stats_app,
)
from archaudit.stats.choices.options import DEFAULT, JudgeOptions


@stats_app.command("snr")
@output_flags
@judge_flags("baseline", "correction", "alpha")
def snr_command(
    source: Source,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", help="Metric to measure (repeatable). Default: every one."),
    ] = None,
    options: JudgeOptions = DEFAULT,
    json_: bool = False,
) -> None:
    """Signal-to-noise per metric and scale: seed σ, the spread of the arm means, their ratio
    beside what seed noise alone gives, and the seeds per arm the median effect would need
    (planned for `--correction` over the arms at `--alpha`)."""
    from archaudit.audit.results.findings import Analysis

    found = findings_of(source, metric, options, Analysis.SNR)
    result = found.snr
    if result is None:
        found.require(Analysis.SNR, None)
        return
    if printed_json(result, json_):
        return
    print_rows(
        f"signal and noise per metric, most informative first (against {result.baseline}; "
        "null SNR = what seed noise alone gives)",
        ("metric", "scale", "seeds", "σ", "spread", "SNR", "null SNR", "max |Δ|/σ", "seeds for it"),
        [
            (
                m.metric,
                m.scale,
                m.seeds,
                m.sigma,
                m.spread,
                m.snr,
                m.null_snr,
                m.largest_effect,
                m.seeds_for_largest_effect or ("never (< 2σ)" if m.effects else None),
            )
            for m in result.metrics
        ],
        optional=("null SNR", "seeds", "spread"),
    )
    print_notes([*result.notes, result.warning])
