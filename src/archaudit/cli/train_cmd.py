"""`archaudit train`: one model, one recipe, one seed → a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archaudit.audit.launcher.launch import RunOptions
from archaudit.audit.setup.spec import EvalSpec
from archaudit.cli.base.app import app
from archaudit.cli.base.options import (
    DEFAULT_PRESET,
    Flags,
    Plugins,
    Preset,
    emit,
    in_range,
    load_plugin_modules,
    output_flags,
    with_flags,
)
from archaudit.config import Recipe
from archaudit.formatting import VALUE_DIGITS, num
from archaudit.metrics import PRIMARY_LOSS
from archaudit.names import BASELINE

if TYPE_CHECKING:
    from archaudit.train.run import TrainResult

SUMMARY = (
    "status",
    "steps",
    "tokens",
    "final_loss",
    PRIMARY_LOSS,
    "tokens_per_s",
    "params",
    "active_params",
)
"""The fields of the result that `--json` prints (beside the arm, the folder and the metrics)."""


RecipeFlags = Annotated[
    list[str],
    Flags(
        Recipe,
        prefix="recipe.",
        section="recipe",
        aliases={"corpus": ("--corpus",), "device": ("--device",)},
        unset="the config's",
        panel="Recipe (each flag is also --set recipe.KEY=VALUE)",
    ),
]


@app.command()
@output_flags
@with_flags
def train(
    out: Annotated[
        Path, typer.Option("--out", help="Run directory (created; resumed if it exists).")
    ],
    *,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", help="TOML file with \\[model] and \\[recipe] tables (not with --preset)."
        ),
    ] = None,
    preset: Preset = None,
    arm: Annotated[
        str | None,
        typer.Option(
            "--arm",
            metavar="NAME",
            help="Train this catalogue entry or composition (e.g. softpick, qk_norm+geglu) on top "
            "of the model and recipe; see `archaudit mods list`.",
        ),
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Override one value, e.g. --set model.d_model=128 (repeatable)."
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            "--seed",
            help="Run seed: drives init (and data order if the recipe says vary_data_order).",
            callback=in_range(0),
        ),
    ] = 0,
    recipe: RecipeFlags,
    evaluation: Annotated[EvalSpec, Flags(EvalSpec, defaults={"suite": ""})],
    mirror: Annotated[RunOptions, Flags(RunOptions, ("tracker",))],
    json_: bool = False,
    quiet: bool = False,
    plugin: Plugins = None,
) -> None:
    """Train one model under one recipe and seed into a run directory.

    Rerunning the same command resumes from the newest valid checkpoint; a finished run is not
    retrained but reported. A directory that holds a different run is refused (exit 2). A run
    that diverges (NaN/Inf) ends with status `diverged` and exit code 0. Ctrl-C or SIGTERM
    finishes the current step, saves it, and stops. Every recipe key is a flag of its own
    (`--recipe.lr 1e-3`); the model's nested tables take `--set model.attention.score=...`.
    """
    from archaudit.audit.execute.runner import train_tracked
    from archaudit.config import load_config
    from archaudit.data.vocabulary import trained_model
    from archaudit.mods import resolve_arm
    from archaudit.progress import is_rank_zero, log
    from archaudit.rundir import TRAIN_RESULT

    load_plugin_modules(plugin)
    model_cfg, recipe_cfg = load_config(
        config, preset=preset, overrides=[*(overrides or []), *recipe]
    )
    if arm:
        chosen = resolve_arm(arm)
        model_cfg, recipe_cfg = chosen.apply(model_cfg), chosen.apply_recipe(recipe_cfg)
    model_cfg = trained_model(model_cfg, recipe_cfg)  # the tokenizer sets the vocabulary
    finished_before = (out / TRAIN_RESULT).is_file()
    result, metrics = train_tracked(
        model_cfg,
        recipe_cfg,
        out,
        seed=seed,
        arm=arm or BASELINE,
        scale=preset or DEFAULT_PRESET,
        tracker=mirror.tracker,
        suite=evaluation.suite,
        limit=evaluation.limit,
    )
    if not is_rank_zero():  # under torchrun, one summary from rank 0
        return
    if finished_before and not quiet:
        typer.echo(
            f"already finished: {out} holds this run's result; nothing was trained", err=True
        )
    summary = {k: getattr(result, k) for k in SUMMARY}
    if json_:
        emit(summary | {"arm": arm or BASELINE, "out": out, "metrics": metrics})
        return
    log(_summary_line(result, arm, out))


def _summary_line(result: TrainResult, arm: str | None, out: Path) -> str:
    active = result.active_params
    params = f"{result.params:,} params" + (
        f" ({active:,} active)" if active and active != result.params else ""
    )
    return (
        f"[bold]{result.status}[/bold]: {'' if not arm else f'{arm}, '}{result.steps} steps, "
        f"{result.tokens:,} tokens, {params}, loss {num(result.final_loss, VALUE_DIGITS)}, "
        f"val {num(result.val_loss, VALUE_DIGITS)}, {result.tokens_per_s:,.0f} tok/s → {out}"
    )
