"""`archaudit stats transfer SOURCE`: cross-scale transfer, or transfer across baselines,
read from the findings record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from archaudit.audit.results.settings import TransferSettings
from archaudit.cli.base.options import (
    Flags,
    judge_flags,
    output_flags,
)
from archaudit.cli.stats.common import (
    OptMetric,
    Source,
    findings_of,
    print_notes,
    print_rows,
    show,
    stats_app,
)
from archaudit.errors import ConfigError
from archaudit.formatting import estimate
from archaudit.stats.choices.options import DEFAULT, JudgeOptions

if TYPE_CHECKING:
    from archaudit.stats.analyses.baseline_transfer import BaselineTransfer
    from archaudit.stats.analyses.transfer import ScaleTransfer


@stats_app.command("transfer")
@output_flags
@judge_flags(without=("baseline",))  # its --baseline is repeatable: across baselines
def transfer_command(
    source: Source,
    metric: OptMetric = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option("--baseline", help="Baseline arm; repeat it to compare baselines."),
    ] = None,
    *,
    scales: Annotated[TransferSettings, Flags(TransferSettings)],
    options: JudgeOptions = DEFAULT,
    json_: bool = False,
) -> None:
    """Cross-scale transfer (one baseline) or transfer across baselines (several); on an audit
    folder without --metric, each primary metric."""
    from archaudit.audit.results.findings import Analysis, Settings

    several = tuple(baseline or ()) if baseline and len(baseline) > 1 else ()
    if options.scale is not None and not several:
        _refuse_one_scale(options)
    settings = Settings(transfer=scales, baselines=several)
    analysis = Analysis.BASELINES if several else Analysis.TRANSFER
    asked = (
        options.but(baseline=several[0])
        if several
        else options.but(baseline=(baseline or [options.baseline])[0])
    )
    found = findings_of(source, metric, asked, analysis, each_scale=True, settings=settings)
    if several:
        show(found, analysis, found.baseline_transfers, json_, _print_across)
    else:
        show(found, analysis, found.transfers, json_, _print_transfer)


def _refuse_one_scale(options: JudgeOptions) -> None:
    raise ConfigError(
        f"cross-scale transfer compares two scales, not scale {options.scale!r}: "
        "name them with small and large (--from, --to)"
    )


def _print_across(across: BaselineTransfer) -> None:
    baselines = across.baselines
    print_rows(
        f"{across.metric} at {across.scale}: sign agreement {across.sign_agreement:.0%}",
        ("arm", *(f"Δ vs {b}" for b in baselines), *(f"verdict vs {b}" for b in baselines)),
        [(a.arm, *a.deltas.values(), *a.verdicts.values()) for a in across.arms],
    )
    print_notes(
        [f"verdict flips between baselines: {', '.join(across.flipped)}"] if across.flipped else []
    )


def _print_transfer(result: ScaleTransfer) -> None:
    metric = result.metric
    print_rows(
        f"{metric}: {result.small} → {result.large}, sign kept by {result.sign_preserved:.0%}; "
        f"{estimate('Spearman ρ', result.spearman, result.spearman_interval)}, "
        f"{estimate('Kendall τ', result.kendall, result.kendall_interval)}",
        (
            "arm",
            f"Δ {result.small}",
            f"Δ {result.large}",
            "sign kept",
            "rank",
            "rank after",
            "shift",
            "could be",
            f"verdict {result.large}",
        ),
        [
            (
                a.arm,
                a.delta_small,
                a.delta_large,
                a.sign_preserved,
                a.rank_small,
                a.rank_large,
                a.rank_shift,
                "{}–{} → {}–{}".format(*a.rank_small_range, *a.rank_large_range),
                a.verdict_large,
            )
            for a in result.arms
        ],
        optional=("shift", "sign kept", "could be"),
    )
    notes = list(result.notes)
    if result.diverged_only_at_large:
        notes.append(f"diverged only at {result.large}: {', '.join(result.diverged_only_at_large)}")
    print_notes(notes)
