"""`archaudit train`: one model, one recipe, one seed → a run directory."""

from __future__ import annotations

from pathlib import Path

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


@app.command()
def train(
    out: Path = typer.Option(..., "--out", help="Run directory (created; resumed if it exists)."),
    config: Path | None = typer.Option(
        None, "--config", help="TOML file with \\[model] and \\[recipe] tables (not with --preset)."
    ),
    preset: str | None = typer.Option(
        None,
        "--preset",
        help=f"Named size: tiny, small, base, medium, large \\[default: {DEFAULT_PRESET}].",
    ),
    arm: str | None = typer.Option(
        None,
        "--arm",
        metavar="NAME",
        help="Train this catalogue entry or composition (e.g. softpick, qk_norm+geglu) on top "
        "of the model and recipe; see `archaudit mods list`.",
    ),
    overrides: list[str] = typer.Option(
        [], "--set", help="Override one value, e.g. --set model.d_model=128 (repeatable)."
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        help="Run seed: drives init (and data order if the recipe says vary_data_order).",
    ),
    corpus: str | None = typer.Option(
        None,
        "--corpus",
        help="A .txt or .jsonl file to train on (default: the embedded "
        "synthetic language). Same as --set recipe.corpus=PATH.",
    ),
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
    from archaudit.config import load_config
    from archaudit.mods import resolve_arm
    from archaudit.progress import is_rank_zero, log
    from archaudit.rundir import TRAIN_RESULT
    from archaudit.train import train as run_training

    quiet_output(quiet, json_)
    load_plugin_modules(plugin)
    extra = [f"recipe.corpus={corpus}"] if corpus else []
    extra += [f"recipe.device={device}"] if device else []
    model_cfg, recipe = load_config(config, preset=preset, overrides=[*overrides, *extra])
    if arm:
        chosen = resolve_arm(arm)
        model_cfg, recipe = chosen.apply(model_cfg), chosen.apply_recipe(recipe)
    finished_before = (out / TRAIN_RESULT).is_file()
    result = run_training(model_cfg, recipe, out, seed=seed)
    if not is_rank_zero():  # under torchrun, one summary from rank 0
        return
    if finished_before and not quiet:
        typer.echo(
            f"already finished: {out} holds this run's result; nothing was trained", err=True
        )
    summary = {
        k: getattr(result, k)
        for k in (
            "status",
            "steps",
            "tokens",
            "final_loss",
            "val_loss",
            "tokens_per_s",
            "params",
            "active_params",
        )
    }
    if json_:
        emit(summary | {"arm": arm or "baseline", "out": out})
        return
    active = result.active_params
    params = f"{result.params:,} params" + (
        f" ({active:,} active)" if active and active != result.params else ""
    )
    log(
        f"[bold]{result.status}[/bold]: {'' if not arm else f'{arm}, '}{result.steps} steps, "
        f"{result.tokens:,} tokens, {params}, loss {_fmt(result.final_loss)}, "
        f"val {_fmt(result.val_loss)}, {result.tokens_per_s:,.0f} tok/s → {out}"
    )


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"
