"""`archaudit simulate-null`: simulated audits with no real effect (the family-wise rate)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from archaudit.audit.planning.null_design import NullOptions
from archaudit.cli.base.app import app
from archaudit.cli.base.options import (
    Flags,
    judge_flags,
    output_flags,
)
from archaudit.cli.stats.common import (
    no_table_names,
    printed_json,
    say_text,
)
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.simulation.design_size import DesignSize

if TYPE_CHECKING:
    from archaudit.stats.simulation.simulate import NullSimulation


@app.command("simulate-null")
@output_flags
@judge_flags()
def simulate_null_command(
    *,
    size: Annotated[DesignSize, Flags(DesignSize)],
    null: Annotated[NullOptions, Flags(NullOptions)],
    options: JudgeOptions = DEFAULT,
    json_: bool = False,
) -> None:
    """Simulated audits with no real effect: the verdicts' family-wise false-positive rate."""
    from archaudit.audit.planning.null_design import design_like, loop_rule
    from archaudit.cli.stats.sequential import simulate_sequential_command
    from archaudit.stats import AuditDesign, simulate_null

    like, sequential = null.like, null.sequential
    table_like = like is not None and like.suffix != ".toml"
    if not table_like:
        no_table_names(options)
    taken = (
        design_like(like, null.metric, options)
        if like and not (sequential and table_like)
        else None
    )
    if sequential or (taken and taken.rule):
        looped = (taken.loop_arms, taken.rule) if taken and taken.rule else None
        n_loop, rule = looped or (size.n_arms, loop_rule(options, size.seeds, size.baseline_seeds))
        return simulate_sequential_command(
            n_loop, rule, audits=null.audits, effect=null.effect, effect_arms=null.effect_arms,
            seed=null.seed, noise=null.noise, json_=json_,
        )  # fmt: skip
    design = taken.fixed if taken else None
    design = design or AuditDesign.balanced(size.n_arms, size.seeds, size.baseline_seeds, options)
    result = simulate_null(
        design, audits=null.audits, effect=null.effect, effect_arms=null.effect_arms,
        seed=null.seed, noise=null.noise,
    )  # fmt: skip
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
