"""Closed-form parameter deltas: how many parameters a modification adds to the baseline.

Each formula takes the baseline `ModelConfig` whose sizes it reads and returns an int; its
docstring's first line is the formula as `archaudit mods show` prints it. The tests check every
formula against `count_parameters` of real models at several sizes, so a formula here is an
independent statement about the model, not a copy of its code. Symbols: d = d_model,
L = n_layers, h = n_heads, d_h = head width, V = vocab_size, T = context_length,
H = gated MLP hidden width, g = gains per norm (1 for RMSNorm, 2 for LayerNorm).
"""

from __future__ import annotations

from collections.abc import Callable

from archaudit.config import ModelConfig

ParamsFormula = Callable[[ModelConfig], int]

NORM_VECTORS = {"rmsnorm": 1, "layernorm": 2}  # d-wide learned vectors per norm: gain (+ bias)


def norm_vectors(cfg: ModelConfig) -> int:
    return NORM_VECTORS[cfg.norm.name]


def gated_hidden(cfg: ModelConfig) -> int:
    """8/3·d rounded up to a multiple of 16, i.e. 16·⌈d/6⌉ (the MLP override wins)."""
    return cfg.mlp.hidden or 16 * -(-cfg.d_model // 6)


def block_params(cfg: ModelConfig) -> int:
    """2·d·h·d_h + 2·d·h_kv·d_h + 3·d·H + 2·g·d: one baseline layer."""
    d, d_h, g = cfg.d_model, cfg.dim_head, norm_vectors(cfg)
    attention = 2 * d * cfg.n_heads * d_h + 2 * d * cfg.kv_heads * d_h
    return attention + 3 * d * gated_hidden(cfg) + 2 * g * d


def baseline_params(cfg: ModelConfig) -> int:
    """2·V·d + L·(2·d·h·d_h + 2·d·h_kv·d_h + 3·d·H + 2·g·d) + g·d (untied, no biases)."""
    d = cfg.d_model
    head = 0 if cfg.head.tie_embeddings else cfg.vocab_size * d
    return cfg.vocab_size * d + head + cfg.n_layers * block_params(cfg) + norm_vectors(cfg) * d


def none(cfg: ModelConfig) -> int:
    """0"""
    return 0


def per_head(cfg: ModelConfig) -> int:
    """h·L (one scalar per head and layer)"""
    return cfg.n_heads * cfg.n_layers


def per_layer(cfg: ModelConfig) -> int:
    """L (one scalar per layer)"""
    return cfg.n_layers


def qk_norm(cfg: ModelConfig) -> int:
    """2·d_h·L (RMSNorm gains on queries and keys)"""
    return 2 * cfg.dim_head * cfg.n_layers


def qkv_norm(cfg: ModelConfig) -> int:
    """3·d_h·L (RMSNorm gains on queries, keys and values)"""
    return 3 * cfg.dim_head * cfg.n_layers


def hybrid_norm(cfg: ModelConfig) -> int:
    """3·d_h·L − d·L (Q, K, V gains added; the attention input norms removed)"""
    return (3 * cfg.dim_head - cfg.d_model) * cfg.n_layers


def gqa(cfg: ModelConfig) -> int:
    """−L·d·d_h·h (K and V projections shrink from h to h/2 heads)"""
    return -cfg.n_layers * cfg.d_model * cfg.dim_head * cfg.n_heads


def talking_heads(cfg: ModelConfig) -> int:
    """2·h²·L (an h×h mixing matrix before and after the softmax)"""
    return 2 * cfg.n_heads**2 * cfg.n_layers


def differential(cfg: ModelConfig) -> int:
    """6·d_h·L (four λ vectors of d_h and a 2·d_h-wide output RMSNorm per layer)"""
    return 6 * cfg.dim_head * cfg.n_layers


def gate_elementwise(cfg: ModelConfig) -> int:
    """d·h·d_h·L (gate projection W_g: d → h·d_h)"""
    return cfg.d_model * cfg.n_heads * cfg.dim_head * cfg.n_layers


def gate_headwise(cfg: ModelConfig) -> int:
    """d·h·L (gate projection W_g: d → h)"""
    return cfg.d_model * cfg.n_heads * cfg.n_layers


def learned_positions(cfg: ModelConfig) -> int:
    """T·d (a learned position table)"""
    return cfg.context_length * cfg.d_model


def hyper_connections(n: int) -> ParamsFormula:
    def formula(cfg: ModelConfig) -> int:
        d = cfg.d_model
        return 2 * cfg.n_layers * (n * n + 2 * n + 2 + d * (n + 4))

    # Per sublayer: static α and A_r (n·(n + 1)), β (n), dynamic projections (d·(n + 2)),
    # two scales and one LayerNorm (2·d, whatever model.norm is).
    formula.__doc__ = f"2L·(n² + 2n + 2 + d·(n + 4)), n = {n}"
    return formula


def attn_res(cfg: ModelConfig) -> int:
    """(2L + 1)·d (one query vector per sublayer and one for the output)"""
    return (2 * cfg.n_layers + 1) * cfg.d_model


def value_residual(cfg: ModelConfig) -> int:
    """2·(L − 1) (λ1, λ2 in every layer but the first)"""
    return 2 * (cfg.n_layers - 1)


def per_sublayer_vector(cfg: ModelConfig) -> int:
    """2L·d (one d-vector per sublayer)"""
    return 2 * cfg.n_layers * cfg.d_model


def sandwich(cfg: ModelConfig) -> int:
    """2L·g·d (an output norm per sublayer)"""
    return 2 * cfg.n_layers * norm_vectors(cfg) * cfg.d_model


def rezero(cfg: ModelConfig) -> int:
    """2L·(1 − g·d) (each sublayer drops its norm and gains a scalar α)"""
    return 2 * cfg.n_layers * (1 - norm_vectors(cfg) * cfg.d_model)


def layernorm(cfg: ModelConfig) -> int:
    """(2L + 1)·d (a bias on every RMSNorm turned LayerNorm)"""
    return (2 * cfg.n_layers + 1) * cfg.d_model


def plain_mlp(cfg: ModelConfig) -> int:
    """L·(8·d² − 3·d·H) (two d×4d matrices instead of three d×H)"""
    d = cfg.d_model
    return cfg.n_layers * (8 * d * d - 3 * d * gated_hidden(cfg))


def mtp_head(cfg: ModelConfig) -> int:
    """d² + g·d (one extra projection and norm; the output head is shared)"""
    return cfg.d_model**2 + norm_vectors(cfg) * cfg.d_model


def tied(cfg: ModelConfig) -> int:
    """−V·d (the output head reuses the input embedding)"""
    return -cfg.vocab_size * cfg.d_model


def mixture_of_softmaxes(cfg: ModelConfig) -> int:
    """k·d·(d + 1), k = head.mos_experts (k expert projections d×d and the prior d×k)"""
    return cfg.head.mos_experts * cfg.d_model * (cfg.d_model + 1)


def reshaped(reshape: Callable[[ModelConfig], ModelConfig]) -> ParamsFormula:
    """For modifications that resize the baseline: P(reshaped) − P(baseline)."""

    def formula(cfg: ModelConfig) -> int:
        return baseline_params(reshape(cfg)) - baseline_params(cfg)

    formula.__doc__ = "P(reshaped) − P(baseline), P = the baseline's parameter count"
    return formula


def expert_hidden(cfg: ModelConfig) -> int:
    """H_e = ⌈H/(k + s)⌉ unless `moe.expert_hidden` is set (k = top_k, s = shared experts)."""
    moe = cfg.moe
    return moe.expert_hidden or -(-gated_hidden(cfg) // (moe.top_k + moe.shared_experts))


def moe_layer(cfg: ModelConfig, experts_used: int) -> int:
    """One MoE layer with `experts_used` routed experts counted: router d·E, experts 3·d·H_e
    each, shared experts 3·d·s·H_e, the shared gate d."""
    moe, d = cfg.moe, cfg.d_model
    gate = d if moe.shared_experts and moe.shared_gate else 0
    experts = (experts_used + moe.shared_experts) * 3 * d * expert_hidden(cfg)
    return d * moe.experts + experts + gate


def moe(arm: Callable[[ModelConfig], ModelConfig], *, active: bool) -> ParamsFormula:
    """The MoE MLP of `arm(cfg)` in place of the dense one, all experts or the k a token uses."""

    def formula(cfg: ModelConfig) -> int:
        moe_cfg = arm(cfg)
        used = moe_cfg.moe.top_k if active else moe_cfg.moe.experts
        return cfg.n_layers * (moe_layer(moe_cfg, used) - 3 * cfg.d_model * gated_hidden(cfg))

    used = "k" if active else "E"
    formula.__doc__ = f"L·(d·E + ({used} + s)·3·d·H_e [+ d] − 3·d·H), H_e = ⌈H/(k + s)⌉"
    return formula


def latent_attention(cfg: ModelConfig) -> int:
    """L·(d·h·(d_h + d_R) + d·(r + d_R) + r + 2·r·h·d_h − 3·d·h·d_h), r = 4·d_h, d_R = d_h/2
    (replaces the Q, K, V projections; W_O unchanged)"""
    d, h, d_h = cfg.d_model, cfg.n_heads, cfg.dim_head
    r, d_r = 4 * d_h, max(2, d_h // 2 // 2 * 2)
    latent = d * h * (d_h + d_r) + d * (r + d_r) + r + 2 * r * h * d_h
    return cfg.n_layers * (latent - d * h * d_h - 2 * d * cfg.kv_heads * d_h)


def shared_blocks(blocks: Callable[[ModelConfig], int]) -> ParamsFormula:
    """(U − L)·P_block: L layers run U distinct blocks."""

    def formula(cfg: ModelConfig) -> int:
        return (blocks(cfg) - cfg.n_layers) * block_params(cfg)

    formula.__doc__ = "(U − L)·P_block, P_block = one baseline layer's parameters"
    return formula


def recurrent_depth_active(cfg: ModelConfig) -> int:
    """L·P_block (every block runs twice)"""
    return cfg.n_layers * block_params(cfg)
