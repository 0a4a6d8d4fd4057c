"""The registry, arms and suites: metadata, protocol duties, composition, conflicts, and that
every suite expands to models that build and run."""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_mods_support import FORMULA_TESTED

from archaudit.config import ModelConfig, Recipe
from archaudit.errors import ConfigError
from archaudit.model import build_model
from archaudit.mods import (
    FAMILIES,
    SUITES,
    Citation,
    ConflictError,
    get_modification,
    get_suite,
    list_modifications,
    list_suites,
    modification,
    resolve_arm,
)
from archaudit.mods.suites import AUDIT2026_COMPLETION, AUDIT2026_PUBLIC, OLMPOOL_KNOBS

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
TINY = ModelConfig(vocab_size=64, context_length=16, d_model=64, n_layers=2, n_heads=4)
# The names in the tables of MODIFICATIONS.md (hyper-connections come in n-stream variants).
DESIGN_NAMES = [
    "softpick",
    "ssmax",
    "sigmoid_attn",
    "diff_attn",
    "gated_attn",
    "sink_softmax",
    "talking_heads",
    "qk_norm",
    "logit_softcap",
    "gqa",
    "swa",
    "short_context",
    "alibi",
    "nope",
    "partial_rope",
    "rope_base_500k",
    "sinusoidal",
    "learned_pos",
    "hyper_connections_2",
    "hyper_connections_4",
    "attn_res",
    "value_residual",
    "layerscale",
    "rezero",
    "post_ln",
    "sandwich_norm",
    "peri_ln",
    "hybrid_norm",
    "deepnorm",
    "layernorm",
    "geglu",
    "relu2",
    "gelu_mlp",
    "z_loss",
    "mtp",
    "tied_embeddings",
]


def test_catalogue_has_every_design_entry_and_at_least_35():
    names = [mod.name for mod in list_modifications()]
    assert len(names) >= 35 and len(set(names)) == len(names)
    for name in DESIGN_NAMES:
        get_modification(name)  # raises on a missing entry


def test_every_entry_is_documented_and_cited():
    docs = (ROOT / "docs" / "modifications.md").read_text()
    for mod in list_modifications():
        assert mod.family in FAMILIES
        assert mod.citation.authors and 1990 < mod.citation.year <= 2026 and mod.citation.source
        assert mod.description and "\n" not in mod.description and mod.formula
        assert mod.params_formula != "undocumented", mod.name
        assert f"`{mod.name}`" in docs, f"{mod.name} missing from docs/modifications.md"


def test_protocol_duties_are_the_familys_plus_the_declared_ones():
    for mod in list_modifications():
        downstream = mod.family == "attention-output" or "downstream" in mod.duties
        cross_scale = mod.family in ("residual", "norm") or "cross_scale" in mod.duties
        assert mod.requires_downstream == downstream, mod.name
        assert mod.requires_cross_scale == cross_scale, mod.name
        assert mod.changes_recipe == (mod.family == "recipe"), mod.name


@pytest.mark.parametrize(
    ("name", "downstream", "cross_scale"),
    [
        ("value_residual", True, True),  # changes what attention returns (R6), a residual (R7)
        ("qk_norm", False, True),  # claimed as a stability fix: R7 tests the claim
        ("logit_softcap", False, True),
        ("softpick", True, False),
        ("gqa", False, False),
    ],
)
def test_duties_of_entries_that_declare_more_than_their_family(name, downstream, cross_scale):
    mod = get_modification(name)
    assert (mod.requires_downstream, mod.requires_cross_scale) == (downstream, cross_scale)
    arm = resolve_arm(f"{name}+geglu")  # an arm inherits the duties of its entries
    assert (arm.requires_downstream, arm.requires_cross_scale) == (downstream, cross_scale)


def test_an_unknown_duty_is_refused_at_registration():
    with pytest.raises(
        ConfigError, match=r"unknown duty 'cross-scale'.*did you mean 'cross_scale'"
    ):
        modification(
            "bad_duty",
            family="mlp",
            citation=Citation("A", 2020, "B"),
            description="d",
            formula="f",
            duties=("cross-scale",),
        )


def test_every_modification_has_a_formula_test():
    for path in sorted(HERE.glob("test_mods_formulas_*.py")):  # run each file's @formula marks
        spec = importlib.util.spec_from_file_location(f"_coverage_{path.stem}", path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert {mod.name for mod in list_modifications()} == FORMULA_TESTED


def test_family_filter_and_alias():
    assert {mod.family for mod in list_modifications("norm")} == {"norm"}
    assert get_modification("sandwich_norm") is get_modification("peri_ln")
    with pytest.raises(ConfigError, match="did you mean 'attention-output'"):
        list_modifications("attention-outputs")


# ---------------------------------------------------------------------------------------------
# arms


def test_arm_applies_all_its_modifications_in_catalogue_order():
    arm = resolve_arm("geglu+qk_norm")
    assert arm.name == "qk_norm+geglu" == resolve_arm("qk_norm+geglu").name
    cfg = arm.apply(TINY)
    assert (cfg.attention.qk_norm, cfg.mlp.name) == (True, "geglu")
    assert arm.family == "attention-logits+mlp"
    assert arm.requires_cross_scale  # qk_norm's own duty
    assert not (arm.requires_downstream or arm.changes_recipe)


def test_arm_duties_are_the_union_of_its_modifications():
    arm = resolve_arm("softpick+post_ln+long_warmup")
    assert arm.requires_downstream and arm.requires_cross_scale and arm.changes_recipe
    baseline = resolve_arm("baseline")
    assert baseline.family == "baseline" and baseline.apply(TINY) == TINY
    assert resolve_arm(" baseline + swa ").name == "swa"


def test_later_modifications_read_the_reshaped_model():
    cfg = resolve_arm("gqa+head_width_32").apply(ModelConfig(d_model=256, n_heads=4))
    assert (cfg.n_heads, cfg.n_kv_heads) == (8, 4)
    for spec in ("swa+short_context", "short_context+swa"):  # the window stays T/4 of the base
        cfg = resolve_arm(spec).apply(TINY)
        assert (cfg.attention.window, cfg.context_length) == (4, 8)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ("alibi+nope", "model.position.name"),
        ("softpick+ssmax", "model.attention.score"),
        ("diff_attn+gqa", "model.n_kv_heads"),
        ("diff_attn+qk_norm", "model.attention.qk_norm"),
        ("gated_attn+gated_attn_headwise", "model.attention.gate"),
        ("hyper_connections_2+hyper_connections_4", "model.stream.n_streams"),
        ("attn_res+post_ln", "model.residual.name"),
        ("partial_rope+sinusoidal", "model.position.name"),
        ("long_warmup+no_warmup", "recipe.warmup_frac"),
    ],
)
def test_conflicting_modifications_are_refused_naming_both_and_the_field(spec, field):
    with pytest.raises(ConflictError) as err:
        resolve_arm(spec)
    assert set(err.value.mods) == set(spec.split("+")) and err.value.field == field
    assert all(name in str(err.value) for name in spec.split("+"))


def test_agreeing_claims_combine():
    cfg = resolve_arm("deepnorm+no_residual_scaling").apply(TINY)
    assert cfg.residual.name == "deepnorm" and not cfg.init.scale_residual


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("qk_norm+", "empty modification name"),
        ("qk_norm+qk_norm", "names a modification twice"),
        ("qk_nrom", "did you mean 'qk_norm'"),
    ],
)
def test_bad_arm_specs(spec, message):
    with pytest.raises(ConfigError, match=message):
        resolve_arm(spec)


def test_size_errors_name_the_arm():
    odd = dataclasses.replace(TINY, n_heads=1, d_model=64)
    for spec in ("gqa", "diff_attn"):
        with pytest.raises(ConfigError, match="odd"):
            resolve_arm(spec).apply(odd)
    with pytest.raises(ConfigError, match=r"head_width_64.*multiple of 64"):
        resolve_arm("head_width_64").apply(dataclasses.replace(TINY, d_model=96))
    four_kv_heads = dataclasses.replace(TINY, n_kv_heads=4)  # 2 heads of 32 cannot share 4
    with pytest.raises(ConfigError, match=r"arm 'head_width_32' .*n_kv_heads = 4 must divide"):
        resolve_arm("head_width_32").apply(four_kv_heads)


# ---------------------------------------------------------------------------------------------
# suites


def test_suite_sizes_and_composition():
    assert sorted(list_suites()) == ["audit2026", "foundations", "modern", "narang2021", "olmpool"]
    audit = get_suite("audit2026")
    assert audit == ["baseline", *AUDIT2026_PUBLIC, *AUDIT2026_COMPLETION]
    assert len(audit) == 21 and len(set(audit)) == 21  # the baseline and twenty arms
    assert len(AUDIT2026_PUBLIC) == 9 and "qk_norm+geglu" in AUDIT2026_PUBLIC
    olmpool = get_suite("olmpool")
    cells = {frozenset(m.name for m in resolve_arm(arm).mods) - {"baseline"} for arm in olmpool}
    subsets = {frozenset(c) for r in range(5) for c in itertools.combinations(OLMPOOL_KNOBS, r)}
    assert len(olmpool) == 16 and cells == subsets and olmpool[0] == "baseline"
    assert len(get_suite("narang2021")) == 11 and len(get_suite("foundations")) == 9
    families = {get_modification(arm).family for arm in get_suite("modern")[1:]}
    assert len(get_suite("modern")) == 11
    assert families == {"moe", "structure", "position", "sharing"}


SUITE_ARMS = sorted({arm for name in SUITES for arm in get_suite(name)})


@pytest.mark.parametrize("spec", SUITE_ARMS)
def test_every_suite_arm_builds_a_valid_model(spec):
    arm = resolve_arm(spec)
    assert arm.name == spec  # suites list canonical names
    model = build_model(arm.apply(TINY))
    arm.apply_recipe(Recipe())
    assert torch.isfinite(model(torch.randint(0, 64, (1, 8)))).all()


def test_unknown_suite():
    with pytest.raises(ConfigError, match="did you mean 'olmpool'"):
        get_suite("olmpol")


def test_importing_the_catalogue_does_not_import_torch():
    code = "import sys, archaudit.mods, archaudit.cli.mods_cmd; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
