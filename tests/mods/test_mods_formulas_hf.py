"""The mixture-of-experts and latent-attention entries against the implementations people run:
transformers' Mixtral, OLMoE, Qwen2-MoE, DeepSeek-V2 MoE blocks, Switch Transformers' losses and
DeepSeek-V3's multi-head latent attention, with the same weights copied across, compared in
float64 on outputs and gradients (inputs and every weight).

One deliberate difference of transformers is neutralised, not hidden: its routers cast to float32
(`.float()`, `softmax(dtype=torch.float)`, `.type(torch.float32)`) — a no-op in bf16 training but
a 1e-7 rounding in a float64 test. `float32_as_float64` maps those casts to float64 while
transformers runs, so what is compared is the math; `test_..._float32_router_rounding` measures
the unpatched difference too. Our capacity dropping has no counterpart in these blocks (they are
dropless): the Switch entry is compared with a capacity no expert can fill, and dropping itself
is checked against a re-typed rule in test_mods_formulas_moe.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from test_mods_support import formula

from archaudit.config import ModelConfig
from archaudit.model.context import ForwardContext
from archaudit.model.latent import LatentAttention
from archaudit.model.moe import MoE
from archaudit.model.position import RoPE
from archaudit.mods import get_modification, resolve_arm

pytest.importorskip("transformers")

D, B, T = 16, 2, 12
BOUND = 1e-10  # relative, where the math is the same
BASE = ModelConfig(vocab_size=32, context_length=T, d_model=D, n_layers=2, n_heads=4)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def recorded(name: str) -> float:
    return get_modification(name).check.max_abs_diff


@contextlib.contextmanager
def float32_as_float64():
    """transformers' float32 casts become float64 while the reference runs."""
    as_float, as_type, softmax, t_softmax, to = (
        torch.Tensor.float,
        torch.Tensor.type,
        F.softmax,
        torch.Tensor.softmax,
        torch.Tensor.to,
    )

    def wide(dtype):
        return torch.float64 if dtype in (torch.float32, torch.float) else dtype

    def widened_to(x, *args, **kwargs):
        args = [wide(a) if isinstance(a, torch.dtype) else a for a in args]
        if "dtype" in kwargs:
            kwargs["dtype"] = wide(kwargs["dtype"])
        return to(x, *args, **kwargs)

    with (
        mock.patch.object(torch.Tensor, "float", lambda x: x.double()),
        mock.patch.object(torch.Tensor, "to", widened_to),
        mock.patch.object(torch.Tensor, "type", lambda x, dtype=None: as_type(x, wide(dtype))),
        mock.patch.object(
            F, "softmax", lambda x, *a, dtype=None, **k: softmax(x, *a, dtype=wide(dtype), **k)
        ),
        mock.patch.object(
            torch.Tensor,
            "softmax",
            lambda x, *a, dtype=None, **k: t_softmax(x, *a, dtype=wide(dtype), **k),
        ),
    ):
        yield
    assert torch.Tensor.float is as_float


def ours_moe(spec: str, **moe) -> MoE:
    cfg = resolve_arm(spec).apply(BASE)
    cfg = dataclasses.replace(cfg, moe=dataclasses.replace(cfg.moe, **moe))
    torch.manual_seed(0)
    module = MoE(cfg).double()
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, 0.4)  # a router that separates experts, not a near-uniform one
    return module


def copy_experts(ours: MoE, experts) -> None:
    with torch.no_grad():
        for e, ex in enumerate(ours.experts):
            experts.gate_up_proj[e].copy_(torch.cat([ex.w1.weight, ex.w3.weight]))
            experts.down_proj[e].copy_(ex.w2.weight)


def copy_mlp(ours, mlp) -> None:
    with torch.no_grad():
        mlp.gate_proj.weight.copy_(ours.w1.weight)
        mlp.up_proj.weight.copy_(ours.w3.weight)
        mlp.down_proj.weight.copy_(ours.w2.weight)


def expert_grads(ours: MoE, experts) -> list[tuple[torch.Tensor, torch.Tensor]]:
    pairs = []
    for e, ex in enumerate(ours.experts):
        pairs.append(
            (torch.cat([ex.w1.weight.grad, ex.w3.weight.grad]), experts.gate_up_proj.grad[e])
        )
        pairs.append((ex.w2.weight.grad, experts.down_proj.grad[e]))
    return pairs


def compare(
    ours: torch.nn.Module, theirs: torch.nn.Module, grads, call=None
) -> tuple[float, float]:
    """Largest absolute and relative differences over the output, the input's gradient and the
    weights' gradients."""
    torch.manual_seed(1)
    x = torch.randn(B, T, D, dtype=torch.float64)
    r = torch.randn(B, T, D, dtype=torch.float64)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya = ours(xa) if call is None else call[0](xa)
    with float32_as_float64():
        yb = theirs(xb) if call is None else call[1](xb)
    (ya * r).sum().backward()
    (yb * r).sum().backward()
    pairs = [(ya, yb), (xa.grad, xb.grad), *grads()]
    assert len(pairs) > 3 and all(a.shape == b.shape for a, b in pairs)
    pairs = [(a.detach(), b.detach()) for a, b in pairs]
    return max(float((a - b).abs().max()) for a, b in pairs), max(rel(a, b) for a, b in pairs)


def mixtral_block(ours: MoE):
    from transformers.models.mixtral.modeling_mixtral import MixtralConfig, MixtralSparseMoeBlock

    o = ours.options
    config = MixtralConfig(
        hidden_size=D,
        intermediate_size=ours.experts[0].w1.out_features,
        num_local_experts=o.experts,
        num_experts_per_tok=o.top_k,
        router_jitter_noise=0.0,
    )
    block = MixtralSparseMoeBlock(config).double()
    with torch.no_grad():
        block.gate.weight.copy_(ours.router.weight)
    copy_experts(ours, block.experts)
    return block


def olmoe_block(ours: MoE):
    from transformers.models.olmoe.modeling_olmoe import OlmoeConfig, OlmoeSparseMoeBlock

    o = ours.options
    config = OlmoeConfig(
        hidden_size=D,
        intermediate_size=ours.experts[0].w1.out_features,
        num_experts=o.experts,
        num_experts_per_tok=o.top_k,
        norm_topk_prob=o.normalize_top_k,
    )
    block = OlmoeSparseMoeBlock(config).double()
    with torch.no_grad():
        block.gate.weight.copy_(ours.router.weight)
    copy_experts(ours, block.experts)
    return block


def qwen2_block(ours: MoE):
    from transformers.models.qwen2_moe.modeling_qwen2_moe import (
        Qwen2MoeConfig,
        Qwen2MoeSparseMoeBlock,
    )

    o = ours.options
    hidden = ours.experts[0].w1.out_features
    config = Qwen2MoeConfig(
        hidden_size=D,
        moe_intermediate_size=hidden,
        shared_expert_intermediate_size=o.shared_experts * hidden,
        num_experts=o.experts,
        num_experts_per_tok=o.top_k,
        norm_topk_prob=o.normalize_top_k,
    )
    block = Qwen2MoeSparseMoeBlock(config).double()
    with torch.no_grad():
        block.gate.weight.copy_(ours.router.weight)
        block.shared_expert_gate.weight.copy_(ours.shared_gate.weight)
    copy_experts(ours, block.experts)
    copy_mlp(ours.shared, block.shared_expert)
    return block


def deepseek_v2_block(ours: MoE):
    from transformers.models.deepseek_v2.modeling_deepseek_v2 import DeepseekV2Config, DeepseekV2Moe

    o = ours.options
    config = DeepseekV2Config(
        hidden_size=D,
        num_attention_heads=BASE.n_heads,
        num_key_value_heads=BASE.n_heads,
        moe_intermediate_size=ours.experts[0].w1.out_features,
        n_routed_experts=o.experts,
        num_experts_per_tok=o.top_k,
        n_shared_experts=o.shared_experts,
        topk_method="greedy",
        routed_scaling_factor=1.0,
        n_group=1,
        topk_group=1,
    )
    block = DeepseekV2Moe(config).double()
    with torch.no_grad():
        block.gate.weight.copy_(ours.router.weight)
    copy_experts(ours, block.experts)
    copy_mlp(ours.shared, block.shared_experts)
    return block


def router_grads(ours, theirs):
    return [(ours.router.weight.grad, theirs.gate.weight.grad)]


CASES = {
    # entry (and an option set where its capacity can never fill) → the transformers block
    "switch_moe": (dict(capacity_factor=64.0), olmoe_block, ()),
    "mixtral_moe": ({}, mixtral_block, ()),
    "st_moe": (dict(capacity_factor=64.0), mixtral_block, ()),
    "deepseek_moe": ({}, deepseek_v2_block, ("shared",)),
    "qwen_moe": ({}, qwen2_block, ("shared", "shared_gate")),
}


@formula(*CASES)
@pytest.mark.parametrize("name", list(CASES))
def test_moe_entry_matches_transformers_block(name):
    options, reference, extra = CASES[name]
    ours = ours_moe(name, **options)
    theirs = reference(ours)

    def grads():
        pairs = router_grads(ours, theirs) + expert_grads(ours, theirs.experts)
        if "shared" in extra:
            shared = getattr(theirs, "shared_expert", None) or theirs.shared_experts
            pairs += [
                (ours.shared.w1.weight.grad, shared.gate_proj.weight.grad),
                (ours.shared.w2.weight.grad, shared.down_proj.weight.grad),
            ]
        if "shared_gate" in extra:
            pairs.append((ours.shared_gate.weight.grad, theirs.shared_expert_gate.weight.grad))
        return pairs

    diff, relative = compare(ours, theirs, grads)
    print(f"{name}: max |Δ| {diff:.2g}, max relative {relative:.2g}")
    assert diff <= recorded(name) and relative <= BOUND, (name, diff, relative)


def test_mixtral_float32_router_rounding_is_the_only_difference():
    """Unpatched, transformers' float32 router costs ~1e-7 relative; patched, ~1e-16."""
    ours = ours_moe("mixtral_moe")
    theirs = mixtral_block(ours)
    x = torch.randn(B, T, D, dtype=torch.float64)
    with torch.no_grad():
        raw = rel(ours(x), theirs(x))
        with float32_as_float64():
            exact = rel(ours(x), theirs(x))
    assert exact <= BOUND < raw < 1e-5


def aux_of(ours: MoE, x: torch.Tensor) -> torch.Tensor:
    ctx = ForwardContext(T=T, device=x.device, position=None)
    ours.train()(x, ctx)
    return ctx.aux_losses[0]


def test_switch_losses_match_switch_transformers_functions():
    """E·Σ f·P (eq. 4) and the z-loss (ST-MoE eq. 5) of transformers' SwitchTransformers code,
    which averages over groups (batch rows): one group of all B·T tokens here, as our router
    sees them."""
    from transformers.models.switch_transformers import modeling_switch_transformers as st

    torch.manual_seed(2)
    x = torch.randn(1, B * T, D, dtype=torch.float64)
    for balance, z in ((1.0, 0.0), (0.0, 1.0)):
        ours = ours_moe("switch_moe", capacity_factor=None, balance_loss=balance, router_z_loss=z)
        logits = ours.router(x)
        probs = logits.softmax(-1)
        with float32_as_float64():
            expected = (
                st.load_balancing_loss_func(probs, probs.argmax(-1))
                if balance
                else st.router_z_loss_func(logits)
            )
        assert rel(aux_of(ours, x), expected) <= BOUND


def test_top2_balance_loss_matches_mixtral_function_for_one_layer():
    """transformers' Mixtral pools all layers before the product; for one layer it is ours.
    Its accumulators are float32 (not patched here), hence 1e-6."""
    from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func

    ours = ours_moe("mixtral_moe", balance_loss=1.0)
    x = torch.randn(B, T, D, dtype=torch.float64)
    expected = load_balancing_loss_func((ours.router(x).reshape(-1, 8),), 8, top_k=2)
    assert rel(aux_of(ours, x), expected.double()) <= 1e-6


# --- multi-head latent attention ----------------------------------------------------------


def mla_pair(q_rank: int | None):
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
        DeepseekV3Attention,
        DeepseekV3Config,
    )

    cfg = resolve_arm("mla").apply(BASE)
    cfg = dataclasses.replace(
        cfg,
        norm=dataclasses.replace(cfg.norm, eps=1e-6),  # transformers' latent norms use 1e-6
        attention=dataclasses.replace(cfg.attention, latent_q_rank=q_rank),
    )
    torch.manual_seed(0)
    ours = LatentAttention(cfg, 0).double()
    with torch.no_grad():
        for p in ours.parameters():
            p.normal_(0.0, 0.3)
    rank, _, rope = ours.rank, None, ours.d_rope
    config = DeepseekV3Config(
        hidden_size=D,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_heads,
        kv_lora_rank=rank,
        q_lora_rank=q_rank,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=cfg.dim_head,
        v_head_dim=cfg.dim_head,
        rope_interleave=False,  # our RoPE pairs dims (i, i + d/2), transformers' rotate_half
        rope_parameters={"rope_type": "default", "rope_theta": cfg.position.rope_base},
        max_position_embeddings=T,
    )
    config._attn_implementation = "eager"
    theirs = DeepseekV3Attention(config, 0).double()
    with torch.no_grad():
        if q_rank is None:
            theirs.q_proj.weight.copy_(ours.q_proj.weight)
        else:
            theirs.q_a_proj.weight.copy_(ours.q_proj[0].weight)
            theirs.q_a_layernorm.weight.copy_(ours.q_proj[1].weight)
            theirs.q_b_proj.weight.copy_(ours.q_proj[2].weight)
        theirs.kv_a_proj_with_mqa.weight.copy_(ours.kv_a.weight)
        theirs.kv_a_layernorm.weight.copy_(ours.kv_norm.weight)
        theirs.kv_b_proj.weight.copy_(ours.kv_b.weight)
        theirs.o_proj.weight.copy_(ours.o_proj.weight)
    return cfg, ours, theirs, float64_rotary(config)


def float64_rotary(config):
    """transformers' DeepseekV3RotaryEmbedding builds its table in float32 (`dtype=torch.float`);
    the same formula (default RoPE, cos/sin of cat(freqs, freqs)) in float64."""
    dim = config.qk_rope_head_dim
    assert config.head_dim == dim  # the width transformers' table is built for
    inv_freq = 1.0 / (
        config.rope_parameters["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    )
    freqs = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)[None]
    return emb.cos(), emb.sin()


@formula("mla")
@pytest.mark.parametrize("q_rank", [None, 12])
def test_mla_matches_deepseek_v3_attention(q_rank):
    cfg, ours, theirs, rotary = mla_pair(q_rank)
    position = RoPE(cfg)
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)[None, None]

    def call_ours(x):
        return ours(x, ForwardContext(T=T, device=x.device, position=position))

    def call_theirs(x):
        return theirs(x, rotary, mask)[0]

    def grads():
        names = [("kv_a", "kv_a_proj_with_mqa"), ("kv_b", "kv_b_proj"), ("o_proj", "o_proj")]
        return [(getattr(ours, a).weight.grad, getattr(theirs, b).weight.grad) for a, b in names]

    diff, relative = compare(ours, theirs, grads, call=(call_ours, call_theirs))
    print(f"mla (q latent {q_rank}): max |Δ| {diff:.2g}, max relative {relative:.2g}")
    assert diff <= recorded("mla") and relative <= BOUND, (diff, relative)
