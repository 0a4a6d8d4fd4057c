"""`archaudit simulate-null --sequential`: the closed loop of `run --until-settled` under the
null (and planted effects), next to the fixed design on the same draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console

from archaudit.cli.base.options import emit
from archaudit.cli.base.tables import say
from archaudit.errors import ConfigError

if TYPE_CHECKING:
    from archaudit.stats.simulation.sequential import SequentialRule


def simulate_sequential_command(
    n_arms: int,
    rule: SequentialRule,
    *,
    audits: int,
    effect: float,
    effect_arms: int,
    seed: int,
    json_: bool,
    noise: str = "normal",
) -> None:
    """Print `simulate_sequential` for `n_arms` arms under the loop's `rule`."""
    from archaudit.stats.simulation.sequential import simulate_sequential

    if effect_arms and effect == 0.0:
        raise ConfigError("--effect-arms needs a nonzero --effect")
    result = simulate_sequential(
        arms=n_arms,
        rule=rule,
        audits=audits,
        effects=(effect,) * effect_arms,
        seed=seed,
        noise=noise,
    )
    if json_:
        emit(result)
        return
    say(Console(), "\n".join(_loop_lines(result, n_arms, rule, audits, noise)), indent="    ")
    print_panel(result.panel, result.panel_worst)


def _loop_lines(
    result: Any, n_arms: int, rule: SequentialRule, audits: int, noise: str
) -> list[str]:
    """The lines of a sequential simulation: the loop's rule, its rate, runs and power."""
    seeds = rule.max_seeds
    lines = [
        f"{audits} sequential audits, {n_arms} arms × at most {seeds} seeds, baseline "
        f"{rule.baseline_seeds} → {rule.baseline_cap} seeds, O'Brien–Fleming spending + Holm "
        f"at α = {rule.alpha}, futility below {rule.futility} predictive power; robust tests "
        f"(Welch from 2 seeds, a confirmation seed before any verdict), "
        f"{'normal' if noise == 'panel' else noise} noise:",
        f"  family-wise false-positive rate {result.fwer:.3f} ± {result.fwer_se:.3f}",
        f"  runs per audit {result.runs_mean:.1f} (at most {result.runs_max}); the fixed "
        f"{seeds}-seed design: {result.fixed_runs} runs, rate {result.fixed_fwer:.3f}",
    ]
    for key, power in result.power.items():
        lines.append(
            f"  planted {key} σ effects found {power:.3f} (fixed design: "
            f"{result.fixed_power[key]:.3f}), {result.seeds_mean[key]:.2f} seeds per arm"
        )
    return lines


def print_panel(panel: Sequence[Any], worst: Any) -> None:
    """The noise panel's rates (`PanelRate`s), each with its MC s.e., and the worst."""
    if not panel:
        return
    lines = ["  noise panel (family-wise false-positive rate ± MC s.e.):"]
    for rate in panel:
        flag = "  ABOVE α" if rate.above_alpha else ""
        lines.append(f"    {rate.noise:<14} {rate.fwer:.4f} ± {rate.fwer_se:.4f}{flag}")
    lines.append(f"  worst: {worst.noise} {worst.fwer:.4f} ± {worst.fwer_se:.4f}")
    say(Console(), "\n".join(lines), indent="      ")
