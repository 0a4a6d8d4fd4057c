"""Typed, frozen configuration: the model (`ModelConfig`, one table per slot) and the shared
training recipe (`Recipe`).

Both load from TOML (`[model]`, `[model.attention]`, ..., `[recipe]`) and take
`--set section.key=value` overrides (`--set model.attention.score=softpick`). Every mistake is a
`ConfigError` naming the key, the bad value and what is allowed. This package must stay free of
torch so that planning and statistics never pay for importing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from archaudit.config.model import (
    AttentionConfig,
    BlockConfig,
    HeadConfig,
    InitConfig,
    MLPConfig,
    ModelConfig,
    MoEConfig,
    NormConfig,
    ObjectiveConfig,
    PositionConfig,
    ResidualConfig,
    SharingConfig,
    StreamConfig,
)
from archaudit.config.recipe import PARALLEL, PRECISIONS, Recipe
from archaudit.config.tables import (
    apply_overrides,
    build,
    canonical_json,
    check_sections,
    flatten,
    load_toml,
    merge_tables,
    parse_override,
    replace_paths,
    to_dict,
)
from archaudit.errors import ConfigError

__all__ = [
    "PARALLEL",
    "PRECISIONS",
    "TRAIN_SECTIONS",
    "AttentionConfig",
    "BlockConfig",
    "HeadConfig",
    "InitConfig",
    "MLPConfig",
    "MoEConfig",
    "ModelConfig",
    "NormConfig",
    "ObjectiveConfig",
    "PositionConfig",
    "Recipe",
    "ResidualConfig",
    "SharingConfig",
    "StreamConfig",
    "apply_overrides",
    "build",
    "canonical_json",
    "check_sections",
    "flatten",
    "load_config",
    "load_toml",
    "merge_tables",
    "parse_override",
    "replace_paths",
    "to_dict",
]

TRAIN_SECTIONS = ("model", "recipe")


def load_config(
    path: str | Path | None = None,
    *,
    preset: str | None = None,
    overrides: Sequence[str] = (),
) -> tuple[ModelConfig, Recipe]:
    """Model and recipe from a TOML file (`[model]`, `[recipe]`) or a named preset, then the
    `--set section.key=value` overrides. With neither file nor preset: the `tiny` preset."""
    from archaudit.presets import preset as named_preset

    if path is not None and preset is not None:
        raise ConfigError("give either a config file or a preset, not both")
    tree = load_toml(path) if path is not None else named_preset(preset or "tiny")
    where = str(path) if path is not None else f"preset {preset or 'tiny'!r}"
    check_sections(tree, TRAIN_SECTIONS, where=where)
    try:
        tree = apply_overrides(tree, overrides, sections=TRAIN_SECTIONS)
        model = build(ModelConfig, tree.get("model", {}), section="model")
        recipe = build(Recipe, tree.get("recipe", {}), section="recipe")
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    return model, recipe
