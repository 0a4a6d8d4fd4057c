"""`archaudit train`: one model, one recipe, one seed → a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archaudit.cli.app import app
from archaudit.cli.options import (
    DEFAULT_PRESET,
    Device,
    Json,
    Plugins,
    Quiet,
    emit,
    load_plugin_modules,
    quiet_output,
)
from archaudit.formatting import VALUE_DIGITS, num

if TYPE_CHECKING:
    from archaudit.train.run import TrainResult

SUMMARY = (
    "status",
    "steps",
    "tokens",
    "final_loss",
    "val_loss",
    "tokens_per_s",
    "params",
    "active_params",
)
"""The fields of the result that `--json` prints (beside the arm, the folder and the metrics)."""


@app.command()
def train(
    out: Annotated[
        Path, typer.Option("--out", help="Run directory (created; resumed if it exists).")
    ],
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", help="TOML file with \\[model] and \\[recipe] tables (not with --preset)."
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help=f"Named size: tiny, small, base, medium, large \\[default: {DEFAULT_PRESET}].",
        ),
    ] = None,
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
        ),
    ] = 0,
    corpus: Annotated[
        str | None,
        typer.Option(
            "--corpus",
            help="A .txt or .jsonl file to train on (default: the embedded "
            "synthetic language). Same as --set recipe.corpus=PATH.",
        ),
    ] = None,
    tracker: Annotated[
        str,
        typer.Option(
            "--tracker", help="Mirror the run to tensorboard | wandb | mlflow (its own extra)."
        ),
    ] = "",
    suite: Annotated[
        str,
        typer.Option(
            "--suite",
            help="Evaluate on this suite after training (evals.json; the tracker's summary).",
        ),
    ] = "",
    limit: Annotated[int | None, typer.Option("--limit", help="Items per task of --suite.")] = None,
    device: Device = "",
    json_: Json = False,
    quiet: Quiet = False,
    plugin: Plugins = None,
) -> None:
    """Train one model under one recipe and seed into a run directory.

    Rerunning the same command resumes from the newest valid checkpoint; a finished run is not
    retrained but reported. A directory that holds a different run is refused (exit 2). A run
    that diverges (NaN/Inf) ends with status `diverged` and exit code 0. Ctrl-C or SIGTERM
    finishes the current step, saves it, and stops.
    """
    from archaudit.audit.runner import train_tracked
    from archaudit.config import load_config
    from archaudit.mods import resolve_arm
    from archaudit.progress import is_rank_zero, log
    from archaudit.rundir import TRAIN_RESULT

    quiet_output(quiet, json_)
    load_plugin_modules(plugin)
    extra = [f"recipe.corpus={corpus}"] if corpus else []
    extra += [f"recipe.device={device}"] if device else []
    model_cfg, recipe = load_config(config, preset=preset, overrides=[*(overrides or []), *extra])
    if arm:
        chosen = resolve_arm(arm)
        model_cfg, recipe = chosen.apply(model_cfg), chosen.apply_recipe(recipe)
    finished_before = (out / TRAIN_RESULT).is_file()
    result, metrics = train_tracked(
        model_cfg,
        recipe,
        out,
        seed=seed,
        arm=arm or "baseline",
        scale=preset or DEFAULT_PRESET,
        tracker=tracker,
        suite=suite,
        limit=limit,
    )
    if not is_rank_zero():  # under torchrun, one summary from rank 0
        return
    if finished_before and not quiet:
        typer.echo(
            f"already finished: {out} holds this run's result; nothing was trained", err=True
        )
    summary = {k: getattr(result, k) for k in SUMMARY}
    if json_:
        emit(summary | {"arm": arm or "baseline", "out": out, "metrics": metrics})
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
