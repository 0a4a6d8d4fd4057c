"""`archaudit simulate-null`: simulated audits with no real effect (the family-wise rate)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archaudit.cli.app import app
from archaudit.cli.options import (
    in_range,
    judge_flags,
    output_flags,
)
from archaudit.cli.stats.common import (
    BaselineSeeds,
    DesignSeeds,
    NArms,
    Seed,
    no_table_names,
    printed_json,
    say_text,
)
from archaudit.stats.options import DEFAULT, JudgeOptions

if TYPE_CHECKING:
    from archaudit.stats.simulation.simulate import NullSimulation


@app.command("simulate-null")
@output_flags
@judge_flags()
def simulate_null_command(
    n_arms: NArms = 19,
    seeds: DesignSeeds = 3,
    audits: Annotated[int, typer.Option("--audits", help="Simulated audits.")] = 2000,
    baseline_seeds: BaselineSeeds = None,
    like: Annotated[
        Path | None,
        typer.Option(
            "--like",
            help="Take the design (arms, seeds per arm, baseline and anchor seeds) from an audit "
            "file (.toml), a results CSV or an audit directory, instead of --n-arms/--seeds.",
        ),
    ] = None,
    metric: Annotated[
        str | None, typer.Option("--metric", help="With --like CSV: the metric (default: first).")
    ] = None,
    options: JudgeOptions = DEFAULT,
    effect: Annotated[
        float, typer.Option("--effect", help="Planted effect in σ.", callback=in_range())
    ] = 0.0,
    effect_arms: Annotated[int, typer.Option("--effect-arms", help="Arms with it.")] = 0,
    seed: Seed = 0,
    json_: bool = False,
    sequential: Annotated[
        bool, typer.Option("--sequential", help="The `run --until-settled` loop, --seeds at most.")
    ] = False,
    noise: Annotated[
        str,
        typer.Option(
            "--noise",
            metavar="MODEL",
            help="Seed noise: normal, t3, lognormal:S, hetero:F[:K] (K arms with seed σ × F), "
            "or panel (all eight; prints each rate and the worst).",
        ),
    ] = "normal",
) -> None:
    """Simulated audits with no real effect: the verdicts' family-wise false-positive rate."""
    from archaudit.audit.null_design import design_like, loop_rule
    from archaudit.cli.stats.sequential import simulate_sequential_command
    from archaudit.stats import AuditDesign, simulate_null

    table_like = like is not None and like.suffix != ".toml"
    if not table_like:
        no_table_names(options)
    null = design_like(like, metric, options) if like and not (sequential and table_like) else None
    if sequential or (null and null.rule):
        looped = (null.loop_arms, null.rule) if null and null.rule else None
        n_loop, rule = looped or (n_arms, loop_rule(options, seeds, baseline_seeds))
        return simulate_sequential_command(
            n_loop,
            rule,
            audits=audits,
            effect=effect,
            effect_arms=effect_arms,
            seed=seed,
            noise=noise,
            json_=json_,
        )
    design = null.fixed if null else None
    design = design or AuditDesign.balanced(n_arms, seeds, baseline_seeds, options)
    result = simulate_null(
        design, audits=audits, effect=effect, effect_arms=effect_arms, seed=seed, noise=noise
    )
    if not printed_json(result, json_):
        _print_null(result)


def _print_null(result: NullSimulation) -> None:
    """A `NullSimulation` as the lines a reader checks: the rates, and the panel's if run."""
    from archaudit.cli.stats.sequential import print_panel

    label = "calibrated" if result.calibrated else "UNCALIBRATED paper mode"
    assumed = result.design.equal_variance or not result.calibrated
    say_text(
        f"{result.audits} null audits of {result.design.describe()} ({label}"
        + (", ASSUMES every arm's seed σ is the baseline's" if assumed else "")
        + f"), {result.noise if result.noise != 'panel' else 'normal'} noise:\n"
        f"  family-wise false-positive rate {result.fwer:.4f} ± {result.fwer_se:.4f}"
        + ("  ABOVE α" if result.fwer > result.alpha + 2 * result.fwer_se else "")
        + f"\n  false candidates (≥ 1 null arm)  {result.candidate_rate:.4f} (each a second seed)"
        f"\n  calibrated level α′              {result.level:.3g} median, {result.level_min:.3g} "
        "lowest (each audit's own)"
        + f"\n  per-arm rate at raw p < α/m      {result.per_arm_rate:.4f} "
        f"(α/m = {result.alpha / result.n_arms:.4f})\n"
        f"  uncorrected (any raw p < α)     {result.fwer_uncorrected:.3f} "
        f"(1 − (1 − α)^m = {result.fwer_uncorrected_formula:.3f} for independent tests)"
    )
    if result.effect_arms:
        say_text(
            f"  planted {result.effect} σ effects found {result.found_rate:.3f} ± "
            f"{result.found_se:.3f} (power formula: {result.power_predicted:.3f})"
        )
    print_panel(result.panel, result.panel_worst)
