"""Issue 36, item 4 (config side): float fields are finite where they enter, MoE, latent and
objective fields have ranges, a `--set` value cannot smuggle in a second line, and a damaged
spec.json in a run is one line naming it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from archaudit.config import ModelConfig, build, parse_override
from archaudit.errors import ArchauditError, ConfigError
from archaudit.model.load import read_run_spec


@pytest.mark.parametrize(
    ("table", "match"),
    [({"moe": {"capacity_factor": math.inf}}, "capacity_factor = inf must be a finite number"),
     ({"moe": {"balance_loss": math.nan}}, "balance_loss = nan must be a finite"),
     ({"moe": {"router_z_loss": -math.inf}}, "router_z_loss = -inf must be a finite"),
     ({"residual": {"layerscale_init": math.nan}}, "layerscale_init = nan must be a finite"),
     ({"moe": {"capacity_factor": 10**400}}, "must be a finite number"),
     ({"objective": {"mtp_heads": 32}}, "mtp_heads = 32 must be below model.context_length = 32"),
     ({"moe": {"experts": 4097}}, "at most 4096"),
     ({"attention": {"latent_rank": 65}}, "latent_rank = 65 exceeds 64"),
     ({"attention": {"latent_q_rank": 33}}, "latent_q_rank = 33 exceeds 32"),
     ({"attention": {"latent_rope_dim": 18}}, "latent_rope_dim = 18 exceeds 16")],
)  # fmt: skip
def test_model_fields_out_of_range_are_refused(table: dict, match: str) -> None:
    shape = {"d_model": 32, "n_heads": 2, "context_length": 32}
    with pytest.raises(ConfigError, match=match):
        build(ModelConfig, shape | table, section="model")


def test_direct_construction_refuses_nan_coefficients_too() -> None:
    from archaudit.config.model import MoEConfig, ObjectiveConfig

    with pytest.raises(ConfigError):
        MoEConfig(balance_loss=math.nan)
    with pytest.raises(ConfigError):
        ObjectiveConfig(mtp_weight=math.nan)


@pytest.mark.parametrize("text", ["recipe.lr=1e-3\nmodel.d_model=3", "name=a\rb", "name=a\x00"])
def test_an_override_is_one_line(text: str) -> None:
    with pytest.raises(ConfigError, match="line break or NUL"):
        parse_override(text)


@pytest.mark.parametrize(
    ("content", "match"),
    [("{", "not valid JSON"), ("[]", "holds list"), ('{"model": 3, "tokenizer": "byte"}',
      "model must be a table"), ('{"model": {}}', "tokenizer must be"),
     ('{"model": {}, "tokenizer": "byte", "recipe": {"steps": "9"}}', "recipe.steps")],
)  # fmt: skip
def test_a_damaged_spec_json_is_one_line_naming_it(tmp_path: Path, content: str, match: str):
    (tmp_path / "spec.json").write_text(content)
    with pytest.raises(ArchauditError, match=match) as caught:
        read_run_spec(tmp_path / "spec.json")
    assert "spec.json" in str(caught.value) and "\n" not in str(caught.value)
