"""`archaudit mods list` and `archaudit mods show`: the modification catalogue."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from archaudit.cli.base.app import app
from archaudit.cli.base.options import (
    DEFAULT_PRESET,
    Plugins,
    Preset,
    emit,
    load_plugin_modules,
    output_flags,
)
from archaudit.config import ModelConfig, apply_overrides, build
from archaudit.mods import Modification, get_modification, list_modifications
from archaudit.mods.params import baseline_params
from archaudit.presets import preset

mods_app = typer.Typer(
    help="The modification catalogue: what each arm changes, its paper and protocol duties.",
    no_args_is_help=True,
)
app.add_typer(mods_app, name="mods")


@mods_app.command("list")
@output_flags
def list_command(
    family: Annotated[
        str | None, typer.Option("--family", metavar="FAMILY", help="Only this family.")
    ] = None,
    json_: bool = False,
    plugin: Plugins = None,
) -> None:
    """List the modifications: name, family, protocol duties, description."""
    load_plugin_modules(plugin)
    mods = list_modifications(family)
    if json_:
        emit([mod.describe() for mod in mods])
        return
    width = max((len(mod.name) for mod in mods), default=0)
    for mod in mods:
        duties = ",".join(_duties(mod)) or "-"
        typer.echo(f"{mod.name:<{width}}  {mod.family:<16}  {duties:<22}  {mod.description}")
    typer.echo(f"{len(mods)} modifications. `archaudit mods show NAME` for formula and paper.")


@mods_app.command("show")
@output_flags
def show_command(
    name: Annotated[str, typer.Argument(help="A modification name, e.g. softpick.")],
    size: Preset = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="model.KEY=VALUE", help="Adjust the size. Repeatable."),
    ] = None,
    json_: bool = False,
    plugin: Plugins = None,
) -> None:
    """Show one modification: formula, what it sets, parameter delta at a size, duties, paper,
    and the reference it was checked against with the largest difference measured."""
    load_plugin_modules(plugin)
    mod = get_modification(name)
    tree = apply_overrides(preset(size or DEFAULT_PRESET), overrides or (), sections=("model",))
    cfg: ModelConfig = build(ModelConfig, tree["model"], section="model")
    info: dict[str, Any] = {
        **mod.describe(),
        "size": {k: getattr(cfg, k) for k in ("d_model", "n_layers", "n_heads", "vocab_size")},
        "sets": mod.claims(cfg),
        "recipe": mod.recipe_claims(),
        "params_delta": mod.params_delta(cfg),
        "active_params_delta": mod.active_params_delta(cfg),
        "baseline_params": baseline_params(cfg),
    }
    if json_:
        emit(info)
        return
    size_text = ", ".join(f"{k}={v}" for k, v in info["size"].items())
    delta, total = info["params_delta"], info["baseline_params"]
    rows = {
        "formula": mod.formula,
        "sets": _assignments(info["sets"]) or "nothing (the baseline)",
        "recipe": f"{_assignments(info['recipe'])}: a recipe arm, trained as `tuned` (R1)"
        if mod.changes_recipe
        else "unchanged",
        "params": f"{delta:+,} ({delta / total:+.2%} of {total:,}) at {size_text}; "
        f"formula {mod.params_formula}",
        "active": _active_row(mod, info["active_params_delta"], total),
        "duties": "; ".join(_duties(mod)) or "none beyond the shared protocol",
        "citation": str(mod.citation),
        "checked": str(mod.check) if mod.check else "no float64 reference comparison recorded",
    }
    typer.echo(f"{mod.name} ({mod.family}): {mod.description}")
    for key, value in rows.items():
        typer.echo(f"  {key:<9} {value}")


def _active_row(mod: Modification, delta: int, total: int) -> str:
    """Active parameters (what a token's forward multiplies by, what FLOPs use)."""
    if mod.active_params is None:
        return "as total (every parameter is used by every token, once)"
    return f"{delta:+,} ({delta / total:+.2%}); formula {mod.active_params_formula}"


def _duties(mod: Modification) -> list[str]:
    duties = ["downstream (R6)"] if mod.requires_downstream else []
    duties += ["cross-scale (R7)"] if mod.requires_cross_scale else []
    return duties + (["tuned (R1)"] if mod.changes_recipe else [])


def _assignments(delta: dict[str, Any]) -> str:
    return ", ".join(f"{key} = {value!r}" for key, value in delta.items())
