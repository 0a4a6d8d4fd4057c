"""`archaudit mods list` and `archaudit mods show`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import archaudit.cli.mods_cmd  # noqa: F401  (registers `archaudit mods`)
from archaudit.cli import app
from archaudit.config import ModelConfig
from archaudit.errors import ConfigError
from archaudit.mods import get_modification, list_modifications, resolve_arm
from archaudit.presets import MODEL_PRESETS

runner = CliRunner()


def invoke(*args: str):
    result = runner.invoke(app, ["mods", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_list_json_has_every_entry_with_its_protocol_fields():
    entries = json.loads(invoke("list", "--json"))
    assert len(entries) >= 35
    assert [e["name"] for e in entries] == [mod.name for mod in list_modifications()]
    for entry in entries:
        mod = get_modification(entry["name"])
        assert entry["family"] == mod.family
        assert entry["requires_downstream"] == mod.requires_downstream
        assert entry["requires_cross_scale"] == mod.requires_cross_scale
        assert entry["duties"] == list(resolve_arm(mod.name).duties)
        assert entry["citation"]["year"] == mod.citation.year and entry["citation"]["authors"]


def test_list_text_and_family_filter():
    text = invoke("list")
    assert all(mod.name in text for mod in list_modifications())
    norms = json.loads(invoke("list", "--family", "norm", "--json"))
    assert {e["family"] for e in norms} == {"norm"} and all(
        e["requires_cross_scale"] for e in norms
    )
    result = runner.invoke(app, ["mods", "list", "--family", "norms"])
    assert isinstance(result.exception, ConfigError) and "did you mean 'norm'" in str(
        result.exception
    )


@pytest.mark.parametrize("name", ["softpick", "hyper_connections_4", "gqa", "long_warmup"])
def test_show_json_gives_the_parameter_delta_at_the_preset_size(name):
    mod = get_modification(name)
    info = json.loads(invoke("show", name, "--json"))
    base = ModelConfig(**MODEL_PRESETS["tiny"])
    assert info["params_delta"] == mod.params_delta(base)
    assert info["sets"] == json.loads(json.dumps(mod.claims(base)))
    assert info["formula"] == mod.formula and info["family"] == mod.family
    wide = json.loads(invoke("show", name, "--json", "--set", "model.d_model=512"))
    assert wide["size"]["d_model"] == 512
    assert wide["params_delta"] == mod.params_delta(
        ModelConfig(**{**MODEL_PRESETS["tiny"], "d_model": 512})
    )


def test_show_text_names_formula_duties_and_paper():
    text = invoke("show", "diff_attn", "--preset", "tiny")
    mod = get_modification("diff_attn")
    for piece in (
        mod.formula,
        str(mod.citation),
        "downstream (R6)",
        "attention.name = 'differential'",
    ):
        assert piece in text
    assert "tuned (R1)" in invoke("show", "no_warmup")


def test_show_unknown_name_suggests_the_closest():
    result = runner.invoke(app, ["mods", "show", "hyper_connection_4"])
    assert isinstance(result.exception, ConfigError)
    assert "did you mean 'hyper_connections_4'" in str(result.exception)


@pytest.mark.parametrize("name", ["hybrid_norm", "sigmoid_attn", "sigmoid_attn_per_position"])
def test_show_states_variant_reference_and_largest_measured_difference(name):
    check = get_modification(name).check
    text = invoke("show", name)
    line = next(row for row in text.splitlines() if row.strip().startswith("checked"))
    for piece in (check.variant, check.reference, f"{check.max_abs_diff:.1g}", check.test):
        assert piece in line
    info = json.loads(invoke("show", name, "--json"))
    assert info["reference_check"]["max_abs_diff"] == check.max_abs_diff
    assert "no float64 reference" in invoke("show", "gqa")
