"""Plugins: the example of docs/plugins.md loaded with `load_plugins` and `--plugin`, and a
module named in the `archaudit.modifications` entry-point group of an installed distribution."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import archaudit.cli.mods_cmd  # noqa: F401  (registers `archaudit mods`)
from archaudit.cli import app
from archaudit.config import ModelConfig
from archaudit.errors import ConfigError
from archaudit.model import build_model, count_parameters
from archaudit.model.decay import decay_flags
from archaudit.model.scores import SCORES
from archaudit.mods import (
    Citation,
    ConflictError,
    get_modification,
    list_modifications,
    load_plugins,
    modification,
    resolve_arm,
)
from archaudit.mods import registry as mods_registry
from archaudit.presets import MODEL_PRESETS

DOCS = Path(__file__).parents[2] / "docs" / "plugins.md"
TINY = ModelConfig(vocab_size=64, context_length=16, d_model=32, n_layers=2, n_heads=4)
SMALL_PLUGIN = """
from archaudit.mods import Citation, modification


@modification("demo_softcap_30", family="attention-logits", citation=Citation("Doe", 2026, "demo"),
              description="soft-cap at 30", formula="z ← 30·tanh(z/30)")
def demo_softcap_30(cfg):
    return {"attention.logit_softcap": 30.0}
"""


@pytest.fixture(autouse=True)
def isolated_registries(monkeypatch):
    """Plugins register into copies, so no test leaves a plugin behind for the next one."""
    monkeypatch.setattr(
        mods_registry.MODIFICATIONS, "_items", dict(mods_registry.MODIFICATIONS._items)
    )
    monkeypatch.setattr(mods_registry, "_ALIASES", dict(mods_registry._ALIASES))
    monkeypatch.setattr(SCORES, "_items", dict(SCORES._items))


def write_module(tmp_path, monkeypatch, name: str, source: str) -> str:
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def docs_example() -> str:
    return re.search(r"```python\n(.*?)```", DOCS.read_text(), re.S).group(1)


def test_docs_example_registers_a_working_modification(tmp_path, monkeypatch):
    module = write_module(tmp_path, monkeypatch, "my_mods_docs_example", docs_example())
    with pytest.raises(ConfigError, match="unknown modification 'tempered_softmax'"):
        get_modification("tempered_softmax")
    load_plugins([module])
    arm = resolve_arm("tempered_softmax+qk_norm")
    assert arm.requires_downstream and "attention-output" in arm.family
    baseline = count_parameters(build_model(TINY))
    model = build_model(resolve_arm("tempered_softmax").apply(TINY))
    assert count_parameters(model) - baseline == get_modification("tempered_softmax").params_delta(
        TINY
    )
    idx = torch.randint(0, 64, (2, 16))
    model.loss(idx, idx).backward()
    assert model.blocks[0].attn.score.log_tau.grad is not None
    assert decay_flags(model)["blocks.0.attn.score.log_tau"] is False  # its declaration


def test_cli_plugin_option_lists_and_shows_the_plugin(tmp_path, monkeypatch):
    module = write_module(tmp_path, monkeypatch, "my_mods_cli_example", docs_example())
    runner = CliRunner()
    listed = runner.invoke(app, ["mods", "list", "--json", "--plugin", module])
    assert listed.exit_code == 0, listed.output
    assert "tempered_softmax" in [entry["name"] for entry in json.loads(listed.output)]
    shown = runner.invoke(app, ["mods", "show", "tempered_softmax", "--plugin", module, "--json"])
    tiny = MODEL_PRESETS["tiny"]  # the default --preset
    assert json.loads(shown.stdout)["params_delta"] == tiny["n_heads"] * tiny["n_layers"]  # h·L


def test_plugin_errors_are_config_errors(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="no_such_plugin_module"):
        load_plugins(["no_such_plugin_module"])
    clash = SMALL_PLUGIN.replace("demo_softcap_30", "qk_norm")
    with pytest.raises(ConfigError, match="already registered"):
        load_plugins([write_module(tmp_path, monkeypatch, "clashing_mods", clash)])
    bad_family = SMALL_PLUGIN.replace("attention-logits", "attention-logit")
    with pytest.raises(ConfigError, match="did you mean 'attention-logits'"):
        load_plugins([write_module(tmp_path, monkeypatch, "bad_family_mods", bad_family)])
    bad_field = SMALL_PLUGIN.replace('"attention.logit_softcap"', '"attention.logit_softcaps"')
    load_plugins([write_module(tmp_path, monkeypatch, "bad_field_mods", bad_field)])
    with pytest.raises(
        ConfigError,
        match=r"unknown key model\.attention\.logit_softcaps.*did you mean 'logit_softcap'",
    ):
        resolve_arm("demo_softcap_30")


def install_distribution(tmp_path, monkeypatch, module: str) -> None:
    """A minimal installed distribution whose entry point names `module`."""
    info = tmp_path / "demo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[archaudit.modifications]\ndemo = {module}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(mods_registry, "_entry_points_loaded", False)


def test_entry_point_group_is_loaded_on_first_lookup(tmp_path, monkeypatch):
    install_distribution(tmp_path, monkeypatch, "demo_entry_point_mods")
    write_module(tmp_path, monkeypatch, "demo_entry_point_mods", SMALL_PLUGIN)
    assert "demo_softcap_30" in [mod.name for mod in list_modifications()]
    assert resolve_arm("demo_softcap_30").apply(TINY).attention.logit_softcap == 30.0


def test_broken_entry_point_names_itself(tmp_path, monkeypatch):
    install_distribution(tmp_path, monkeypatch, "missing_entry_point_module")
    with pytest.raises(ConfigError, match="entry point 'demo'"):
        list_modifications()


def test_extra_parameters_merge_key_by_key_and_conflict_per_key():
    for name, extra in (("uses_k1", {"k1": 1}), ("uses_k2", {"k2": 2}), ("uses_k1_too", {"k1": 3})):
        modification(
            name,
            family="mlp",
            citation=Citation("Doe", 2026, "demo"),
            description=name,
            formula="-",
        )(lambda cfg, extra=extra: {"extra": extra})
    cfg = resolve_arm("uses_k1+uses_k2").apply(dataclasses.replace(TINY, extra={"k0": 0}))
    assert dict(cfg.extra) == {"k0": 0, "k1": 1, "k2": 2}
    with pytest.raises(ConflictError, match=r"model\.extra\.k1"):
        resolve_arm("uses_k1+uses_k1_too")


def test_size_errors_wait_for_the_config_the_arm_is_applied_to():
    def needs_width_96(cfg):
        if cfg.d_model != 96:
            raise ConfigError(f"needs_width_96: model.d_model = {cfg.d_model}")
        return {"position.name": "nope"}

    modification(
        "needs_width_96",
        family="position",
        citation=Citation("Doe", 2026, "demo"),
        description="demo",
        formula="-",
    )(needs_width_96)
    arm = resolve_arm("needs_width_96")  # the default d_model = 256 does not stop resolution
    assert arm.apply(dataclasses.replace(TINY, d_model=96)).position.name == "nope"
    with pytest.raises(ConfigError, match="d_model = 32"):
        arm.apply(TINY)
