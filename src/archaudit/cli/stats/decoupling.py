"""`archaudit stats decoupling SOURCE`: arms whose loss and downstream verdicts disagree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from archaudit.audit.results.settings import DecouplingSettings
from archaudit.cli.base.options import (
    Flags,
    judge_flags,
    output_flags,
)
from archaudit.cli.stats.common import (
    Source,
    findings_of,
    print_rows,
    show,
    stats_app,
)
from archaudit.errors import ConfigError
from archaudit.formatting import BETTER_DOWN, BETTER_UP
from archaudit.metrics import DOWNSTREAM_AVERAGE, PRIMARY_LOSS
from archaudit.stats.choices.options import DEFAULT, JudgeOptions

if TYPE_CHECKING:
    from archaudit.stats.analyses.decoupling import Decoupling


@stats_app.command("decoupling")
@output_flags
@judge_flags()
def decoupling_command(
    source: Source,
    options: JudgeOptions = DEFAULT,
    *,
    compared: Annotated[
        DecouplingSettings,
        Flags(
            DecouplingSettings,
            defaults={"loss_metric": PRIMARY_LOSS, "downstream_metric": DOWNSTREAM_AVERAGE},
        ),
    ],
    json_: bool = False,
) -> None:
    """Arms whose loss and downstream verdicts disagree, per arm and per family; on an audit
    folder without --scale, at each scale."""
    from archaudit.audit.results.findings import Analysis, Settings

    if options.lower_is_better is not None:
        raise ConfigError(
            "stats decoupling judges a loss and a downstream metric, each in its own direction "
            "(the metric registry's, docs/metrics.md): --lower-is-better/--higher-is-better "
            "would turn one of them round"
        )
    settings = Settings(decoupling=compared)
    metrics = (
        compared.loss_metric or PRIMARY_LOSS,
        compared.downstream_metric or DOWNSTREAM_AVERAGE,
    )
    found = findings_of(source, metrics, options, Analysis.DECOUPLING, settings=settings)
    show(found, Analysis.DECOUPLING, found.decouplings, json_, _print_decoupling)


def _print_decoupling(result: Decoupling) -> None:
    loss_metric, downstream_metric, margin = (
        result.loss_metric, result.downstream_metric, result.margin,
    )  # fmt: skip
    print_rows(
        f"{loss_metric} vs {downstream_metric} at {result.scale} (r_L: relative {loss_metric} "
        f"change, {BETTER_DOWN}; Δ: {BETTER_UP}; flat: equivalent within "
        + ("each arm's MDE" if margin is None else f"±{margin} σ")
        + " by TOST, a margin of at most a fifth of the baseline's value, else flat is not "
        "testable; not significant alone is not flat)",
        ("arm", "family", "r_L", "loss", f"Δ {downstream_metric}", "z", "downstream", "decoupled"),
        [
            (
                a.arm,
                a.family,
                a.loss_change,
                _side(a.loss_verdict, a.loss_status),
                a.downstream_delta,
                a.downstream_z,
                _side(a.downstream_verdict, a.downstream_status),
                a.kind or "",
            )
            for a in result.arms
        ],
        optional=("family", "z", "r_L"),
    )
    print_rows(
        "per family",
        ("family", "arms", "decoupled", "share", "mean |r_L|", "mean |z downstream|"),
        [
            (
                f.family,
                f.n_arms,
                f.n_decoupled,
                f.share,
                f.mean_abs_loss_change,
                f.mean_abs_downstream_z,
            )
            for f in result.families
        ],
    )


def _side(verdict: str, status: str) -> str:
    """ "regressor", "within-noise, flat", "within-noise, flat not testable" (margin too wide)."""
    from archaudit.stats.analyses.decoupling import MOVED, NOT_SHOWN_FLAT

    return verdict if status in (MOVED, NOT_SHOWN_FLAT) else f"{verdict}, {status}"
