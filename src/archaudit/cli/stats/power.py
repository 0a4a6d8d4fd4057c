"""`archaudit stats power [SOURCE]`: a design's MDE and seeds needed; with SOURCE, whether
another seed can change each verdict (the findings record's `seeding` slice)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from archaudit.cli.base.options import (
    Flags,
    in_range,
    judge_flags,
    output_flags,
)
from archaudit.cli.stats.common import (
    OptMetric,
    findings_of,
    no_table_names,
    one,
    print_rows,
    printed_json,
    say_defaults,
    say_text,
    stats_app,
)
from archaudit.formatting import num
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.simulation.design_size import DesignSize


@stats_app.command("power")
@output_flags
@judge_flags()
def power_command(
    source: Annotated[
        Path | None, typer.Argument(help="With --metric: per-arm adaptive-seeding advice.")
    ] = None,
    metric: OptMetric = None,
    options: JudgeOptions = DEFAULT,
    *,
    size: Annotated[DesignSize, Flags(DesignSize)],
    effect: Annotated[
        float | None,
        typer.Option(
            "--effect",
            help="Effect in σ: seeds needed to detect it.",
            callback=in_range(0, low_open=True),
        ),
    ] = None,
    json_: bool = False,
) -> None:
    """MDE and seeds needed for a design; with SOURCE, whether another seed can flip a verdict."""
    if source is None:
        no_table_names(options)
        _design_power(size.seeds, size.n_arms, options, size.baseline_seeds, effect, json_)
        return

    _seeding_advice(source, metric, options, json_)


def _seeding_advice(source: Path, metric: str | None, options: JudgeOptions, json_: bool) -> None:
    """`stats power SOURCE`: per arm of each fixed-design judgement, could one more seed change
    its verdict?"""
    from archaudit.audit.results.findings import Analysis

    found = findings_of(source, metric, options, Analysis.VERDICTS, Analysis.SEEDING, loop=False)
    found.require(Analysis.VERDICTS, found.judgements)
    found.require(Analysis.SEEDING, found.seeding)
    advice = found.seeding
    if printed_json(one(advice), json_):
        return
    say_defaults(found)
    for each in advice:
        print_rows(
            f"{each.metric} at {each.scale}: could one more seed change the verdict?",
            ("arm", "seeds", "verdict", "P(change)", "add a seed"),
            [(a.arm, a.n_seeds, a.verdict, a.p_change, a.add_seed) for a in each.arms],
        )


def _design_power(
    seeds: int,
    n_arms: int,
    options: JudgeOptions,
    baseline_seeds: int | None,
    effect: float | None,
    json_: bool,
) -> None:
    """`stats power` without SOURCE: the design's MDE, and the seeds `effect` needs."""
    from archaudit.stats import design_power

    result = design_power(seeds, n_arms, options, baseline_seeds=baseline_seeds, effect=effect)
    if printed_json(result, json_):
        return
    design = result.design
    say_text(
        f"{seeds} seed(s) per arm, {design.baseline_seeds} baseline seeds, m = {n_arms}, "
        f"{design.test} test, {options.correction} at α = {options.alpha} (calibrated level "
        f"α′ = {num(result.level)}, as a verdict table of this design states): minimum "
        f"detectable effect {result.mde_sigmas:.2f} σ at {result.target:.0%} power"
    )
    if effect is None:
        return
    say_text(
        f"to detect {effect} σ: {result.seeds_needed} seeds per arm"
        if result.seeds_needed is not None
        else f"{effect} σ is not detectable with up to {result.max_seeds} seeds per arm with "
        "this baseline (effects under 2 σ are within noise by rule; a small baseline limits "
        "Welch's test)"
    )
