"""Attention output: what attention returns (score functions, gates, differential maps).

R6 applies to every entry here: they can look harmless on loss and still lose downstream.
"""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.errors import ConfigError
from archaudit.mods import params
from archaudit.mods.registry import Citation, ReferenceCheck, modification


@modification(
    "softpick",
    family="attention-output",
    citation=Citation("Zuhri et al.", 2025, "arXiv 2504.20966"),
    description="softmax replaced by a rectified, non-sum-to-one map (no forced sink)",
    formula="w = ReLU(e^z − 1) / Σ_j |e^{z_j} − 1|, masked keys contribute 0",
)
def softpick(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.score": "softpick"}


@modification(
    "ssmax",
    family="attention-output",
    params=params.per_head,
    citation=Citation("Nakanishi", 2025, "arXiv 2501.19399"),
    description="scalable softmax: logits scaled by s·log n, s learned per head",
    formula="w = softmax((s·log n)·z), n = keys visible to the query, s init 0.43",
)
def ssmax(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.score": "ssmax"}


@modification(
    "sigmoid_attn",
    family="attention-output",
    citation=Citation("Ramapuram et al.", 2024, "arXiv 2409.04431"),
    description="elementwise sigmoid instead of softmax, one fixed bias −log n, no normalisation",
    formula="w_ij = σ(z_ij + b), b = −log n, n = maximum sequence length (model.context_length)",
    check=ReferenceCheck(
        variant="the paper's form: one fixed bias b = −log n, n the maximum sequence length",
        reference="the paper's SigmoidAttn(X) = σ(QKᵀ/√d + b)V and apple/ml-sigmoid-attention",
        max_abs_diff=0.0,  # measured 0: the same elementwise operations
        test="tests/mods/test_mods_formulas_reference.py",
    ),
)
def sigmoid_attn(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.score": "sigmoid"}


@modification(
    "sigmoid_attn_per_position",
    family="attention-output",
    citation=Citation("Ramapuram et al.", 2024, "arXiv 2409.04431 (variant: not the paper's bias)"),
    description="sigmoid attention with a per-query bias −log n_i instead of the paper's fixed one",
    formula="w_ij = σ(z_ij − log n_i), n_i = keys visible to query i (i + 1 when causal)",
    check=ReferenceCheck(
        variant="a per-query bias b_i = −log(i + 1), not the paper's fixed one",
        reference="the paper's SigmoidAttn equation with b replaced by b_i",
        max_abs_diff=0.0,  # measured 0
        test="tests/mods/test_mods_formulas_reference.py",
    ),
)
def sigmoid_attn_per_position(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.score": "sigmoid_per_position"}


@modification(
    "diff_attn",
    family="attention-output",
    params=params.differential,
    citation=Citation("Ye et al.", 2024, "ICLR 2025, arXiv 2410.05258"),
    description="differential attention: the difference of two softmax maps, h/2 head pairs",
    formula=(
        "(softmax(Q1K1ᵀ/√d) − λ·softmax(Q2K2ᵀ/√d))·V, λ = e^{λq1·λk1} − e^{λq2·λk2} + λ_init, "
        "λ_init = 0.8 − 0.6·e^{−0.3(l−1)}; per-head RMSNorm, ×(1 − λ_init)"
    ),
)
def diff_attn(cfg: ModelConfig) -> dict[str, Any]:
    if cfg.n_heads % 2:
        raise ConfigError(f"diff_attn pairs heads: model.n_heads = {cfg.n_heads} is odd")
    # The differential module has no GQA, QK(V)-norm, gate or value residual: claiming their
    # baseline values turns a combination that would silently do nothing into a conflict.
    return {
        "attention.name": "differential",
        "n_kv_heads": None,
        "attention.qk_norm": False,
        "attention.qkv_norm": False,
        "attention.gate": None,
        "attention.value_residual": False,
    }


modification(
    "gated_attn",
    family="attention-output",
    params=params.gate_elementwise,
    citation=Citation("Qiu et al.", 2025, "arXiv 2505.06708"),
    description="a sigmoid gate on every attention output channel, before W_O",
    formula="y = SDPA(Q, K, V) ⊙ σ(x·W_g), W_g: d → h·d_h",
)(lambda cfg: {"attention.gate": "elementwise"})

modification(
    "gated_attn_headwise",
    family="attention-output",
    params=params.gate_headwise,
    citation=Citation("Qiu et al.", 2025, "arXiv 2505.06708"),
    description="one sigmoid gate per head on the attention output, before W_O",
    formula="y_h = SDPA(Q, K, V)_h · σ(x·W_g)_h, W_g: d → h",
)(lambda cfg: {"attention.gate": "headwise"})


@modification(
    "sink_softmax",
    family="attention-output",
    citation=Citation("Xiao et al.", 2023, "StreamingLLM, ICLR 2024, arXiv 2309.17453"),
    description="softmax with an always-present zero logit ('softmax + 1'): heads may abstain",
    formula="w_j = e^{z_j} / (1 + Σ_k e^{z_k})",
)
def sink_softmax(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.score": "sink_softmax"}


@modification(
    "sink_softmax_learned",
    family="attention-output",
    params=params.per_head,
    citation=Citation("OpenAI", 2025, "gpt-oss-120b & gpt-oss-20b model card, arXiv 2508.10925"),
    description="sink softmax with a learned sink logit per head (gpt-oss attention sinks)",
    formula="w_j = e^{z_j} / (e^{s_h} + Σ_k e^{z_k}), s_h learned, init 0",
)
def sink_softmax_learned(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.score": "sink_softmax_learned"}


@modification(
    "talking_heads",
    family="attention-output",
    params=params.talking_heads,
    citation=Citation("Shazeer et al.", 2020, "arXiv 2003.02436"),
    description="logits mixed across heads before the softmax, weights mixed after it",
    formula="z'_g = Σ_h P_hg·z_h; w = softmax(z'); w'_g = Σ_h Q_hg·w_h (P, Q init I)",
)
def talking_heads(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.score": "talking_heads"}
