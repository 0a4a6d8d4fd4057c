"""Formula tests for the baseline, MLP, objective, structure and recipe families: MLPs and
heads against their written-out maths, losses against a hand-computed cross-entropy, and the
shape and recipe changes against their definitions."""

from __future__ import annotations

import math

import pytest
import torch
from test_mods_support import build_arm, formula

from archaudit.config import ModelConfig, Recipe
from archaudit.data.identity import recipe_hash
from archaudit.model import count_parameters
from archaudit.mods import resolve_arm

TINY = dict(vocab_size=64, context_length=16, d_model=64, n_layers=2, n_heads=4)
CFG = ModelConfig(**TINY)
T = 8


def build(spec: str, **sizes):
    return build_arm(spec, **{**TINY, **sizes})


def silu(x):
    return x / (1 + torch.exp(-x))


def gelu(x):
    return 0.5 * x * (1 + torch.special.erf(x / math.sqrt(2)))


def relu(x):
    return torch.where(x > 0, x, torch.zeros_like(x))


MLPS = {  # spec → (act, gated, hidden width)
    "baseline": (silu, True, 16 * math.ceil(8 * 64 / 3 / 16)),
    "geglu": (gelu, True, 16 * math.ceil(8 * 64 / 3 / 16)),
    "reglu": (relu, True, 16 * math.ceil(8 * 64 / 3 / 16)),
    "relu2": (lambda x: relu(x) ** 2, False, 4 * 64),
    "gelu_mlp": (gelu, False, 4 * 64),
}


@formula(*MLPS)
@pytest.mark.parametrize("spec", sorted(MLPS))
def test_mlp_matches_its_activation_and_gating(spec):
    act, gated, hidden = MLPS[spec]
    mlp = build(spec).blocks[0].mlp
    assert mlp.w1.weight.shape == (hidden, 64)
    x = torch.randn(T, 64)
    h = act(x @ mlp.w1.weight.T)
    if gated:
        h = h * (x @ mlp.w3.weight.T)
    torch.testing.assert_close(mlp(x), h @ mlp.w2.weight.T, rtol=1e-4, atol=1e-5)


def test_baseline_changes_nothing_and_is_the_identity_of_composition():
    assert resolve_arm("baseline").apply(CFG) == CFG
    assert resolve_arm("baseline+geglu").name == "geglu"


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean of log Σ e^z − z_target, written out."""
    flat, flat_targets = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    lse = torch.log(torch.exp(flat).sum(-1))
    return (lse - flat[torch.arange(len(flat)), flat_targets]).mean()


def batch():
    torch.manual_seed(1)
    return torch.randint(0, 64, (2, T)), torch.randint(0, 64, (2, T))


@formula("z_loss")
def test_z_loss_adds_1e_4_times_mean_squared_log_normaliser():
    model = build("z_loss")
    idx, targets = batch()
    logits = model(idx)
    lse = torch.log(torch.exp(logits).sum(-1))
    expected = cross_entropy(logits, targets) + 1e-4 * (lse**2).mean()
    torch.testing.assert_close(model.loss(idx, targets), expected)


@formula("mtp")
def test_mtp_adds_weighted_cross_entropy_of_token_t_plus_2():
    model = build("mtp")
    assert len(model.mtp) == 1
    idx, targets = batch()
    h = model.hidden(idx)
    main = cross_entropy(model.head(h), targets)
    aux = cross_entropy(model.head(model.mtp[0](h[:, :-1])), targets[:, 1:])
    torch.testing.assert_close(model.loss(idx, targets), main + 0.3 * aux)


@formula("tied_embeddings")
def test_tied_embeddings_use_the_input_embedding_as_output_head():
    model = build("tied_embeddings")
    assert model.head.proj.weight is model.embed.weight
    h = torch.randn(1, T, 64)
    torch.testing.assert_close(model.head(h), h @ model.embed.weight.T)


@formula("mos")
def test_mixture_of_softmaxes_is_a_prior_weighted_mixture_of_distributions():
    head = build("mos").head
    h = torch.randn(1, T, 64)
    prior = torch.exp(h @ head.prior.weight.T)
    prior = prior / prior.sum(-1, keepdim=True)  # (1, T, k)
    experts = torch.tanh(h @ head.experts.weight.T).reshape(1, T, 4, 64)
    logits = experts @ head.proj.weight.T  # (1, T, k, V)
    p = torch.exp(logits) / torch.exp(logits).sum(-1, keepdim=True)
    expected = (prior.unsqueeze(-1) * p).sum(2)
    torch.testing.assert_close(torch.exp(head(h)), expected, rtol=1e-4, atol=1e-7)


@formula("short_context")
def test_short_context_halves_the_context_and_keeps_tokens_per_step():
    arm = resolve_arm("short_context")
    recipe = Recipe(batch_tokens=512)
    short = arm.apply(CFG).context_length
    assert short == CFG.context_length // 2 and arm.apply_recipe(recipe) == recipe
    tokens = [recipe.sequences_per_step(n) * n for n in (CFG.context_length, short)]
    assert tokens == [512, 512]


def non_embedding(model) -> int:
    return count_parameters(model) - 2 * model.embed.weight.numel()


@formula("deep_narrow")
def test_deep_narrow_doubles_depth_at_about_the_same_block_parameters():
    wide, deep = build("baseline", d_model=128), build("deep_narrow", d_model=128)
    assert deep.cfg.n_layers == 2 * wide.cfg.n_layers
    assert deep.cfg.d_model % (2 * 4) == 0
    assert abs(deep.cfg.d_model - 128 / math.sqrt(2)) <= 4  # nearest multiple of 2h = 8
    assert non_embedding(deep) == pytest.approx(non_embedding(wide), rel=0.15)


@formula("head_width_32", "head_width_64")
@pytest.mark.parametrize("width", [32, 64])
def test_head_width_sets_the_head_dimension_at_the_same_parameters(width):
    model = build(f"head_width_{width}", d_model=128)
    attn = model.blocks[0].attn
    assert (attn.n_heads, attn.d_h) == (128 // width, width)
    assert count_parameters(model) == count_parameters(build("baseline", d_model=128))


@formula("long_warmup", "no_warmup")
@pytest.mark.parametrize(("spec", "warmup_steps"), [("long_warmup", 20), ("no_warmup", 0)])
def test_warmup_arms_change_only_the_recipe(spec, warmup_steps):
    arm = resolve_arm(spec)
    recipe = Recipe(steps=100)
    tuned = arm.apply_recipe(recipe)
    assert tuned.warmup_steps == warmup_steps != recipe.warmup_steps
    assert recipe_hash(tuned) != recipe_hash(recipe)
    assert arm.apply(CFG) == CFG and arm.changes_recipe
