"""The model config is nested per slot: every catalogue entry builds through it, the tables
round-trip through TOML-shaped dicts, and the flat keys of earlier versions are refused with
the new key."""

import dataclasses
import tomllib
import typing

import pytest

from archaudit.config import (
    ModelConfig,
    build,
    load_config,
    replace_paths,
    to_dict,
)
from archaudit.errors import ConfigError
from archaudit.model import SLOTS, build_model
from archaudit.mods import list_modifications, registry, resolve_arm

BASE = ModelConfig(vocab_size=61, d_model=64, n_layers=4, n_heads=4, context_length=32)


def _toml(tree: dict, prefix: str = "model") -> str:
    """A nested dict as TOML tables, so the test goes through the file format users write."""
    lines, tables = [f"[{prefix}]"], []
    for key, value in tree.items():
        if isinstance(value, dict) and key != "extra":
            tables.append(_toml(value, f"{prefix}.{key}"))
        elif value is not None and value != {}:
            text = repr(value).lower() if isinstance(value, bool) else repr(value)
            lines.append(f"{key} = {text}".replace("'", '"'))
    return "\n".join([*lines, *tables]) + "\n"


@pytest.mark.parametrize("mod", list_modifications(), ids=lambda mod: mod.name)
def test_every_catalogue_entry_builds_through_the_nested_config(mod, tmp_path):
    cfg = resolve_arm(mod.name).apply(BASE)
    claims = mod.claims(BASE)
    for path in claims:  # every claim is a dotted path into a slot table or the shape
        head = path.partition(".")[0]
        assert head in {f.name for f in dataclasses.fields(ModelConfig)}, path
    file = tmp_path / "model.toml"
    file.write_text(_toml(to_dict(cfg)))
    loaded, _ = load_config(file)
    assert loaded == cfg
    assert build(ModelConfig, tomllib.loads(file.read_text())["model"], section="model") == cfg
    model = build_model(loaded)
    assert model.cfg == cfg


def _value_at(cfg: ModelConfig, path: str) -> object:
    node: object = cfg
    for part in path.split("."):
        node = getattr(node, part)
    return node


@pytest.mark.parametrize(("old", "new"), sorted(ModelConfig.MOVED.items()))
def test_old_flat_keys_are_refused_with_their_new_key(old, new):
    value = _value_at(ModelConfig(), new)  # the default: a valid value, None included
    with pytest.raises(
        ConfigError, match=rf"unknown key model\.{old} \(it moved: did you mean 'model\.{new}'\?\)"
    ):
        build(ModelConfig, {old: value}, section="model")
    with pytest.raises(ConfigError, match=rf"did you mean 'model\.{new}'"):
        load_config(overrides=[f"model.{old}=1"])
    # the new key is a real path (replace_paths refuses unknown ones) and holds what is set
    assert _value_at(replace_paths(ModelConfig(), {new: value}, section="model"), new) == value


@pytest.mark.parametrize(
    "slot", ["norm", "position", "attention", "mlp", "residual", "stream", "head", "block"]
)
def test_a_slot_given_as_a_name_says_how_to_write_it(slot):
    with pytest.raises(ConfigError, match=rf"write model\.{slot}\.name = 'x'"):
        build(ModelConfig, {slot: "x"}, section="model")


def test_every_slot_key_names_a_string_field_of_its_table():
    for key in SLOTS:
        table, _, name = key.partition(".")
        hints = typing.get_type_hints(type(getattr(ModelConfig(), table)))
        assert str in typing.get_args(hints[name]) or hints[name] is str, key


def test_a_plugin_setting_an_old_flat_key_is_refused_with_the_new_one(monkeypatch):
    monkeypatch.setattr(registry.MODIFICATIONS, "_items", dict(registry.MODIFICATIONS._items))
    name = "test_old_flat_softcap"

    @registry.modification(
        name,
        family="attention-logits",
        citation=registry.Citation("Test", 2026, "none"),
        description="sets a key of an earlier version",
        formula="-",
    )
    def old(cfg):
        return {"logit_softcap": 30.0}

    with pytest.raises(registry.ModificationError, match=r"'model\.attention\.logit_softcap'"):
        resolve_arm(name)


def test_nested_and_dotted_claims_mean_the_same():
    dotted = replace_paths(BASE, {"attention.score": "softpick", "extra.k": 1}, section="model")
    nested = build(
        ModelConfig,
        {**to_dict(BASE), "attention": {"score": "softpick"}, "extra": {"k": 1}},
        section="model",
    )
    assert dotted == nested
