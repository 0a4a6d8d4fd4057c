"""Attention logits: what z = q·kᵀ/√d_h is made of, before the score function."""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.mods import params
from archaudit.mods.registry import Citation, modification


@modification(
    "qk_norm",
    family="attention-logits",
    params=params.qk_norm,
    duties=("cross_scale",),  # claimed as a stability fix: R7 checks that claim
    citation=Citation(
        "Gemma Team",
        2025,
        "Gemma 3, arXiv 2503.19786 (also Qwen3, arXiv 2505.09388; OLMo 2, arXiv 2501.00656, "
        "normalises the whole q and k projections across heads instead of each head)",
    ),
    description="RMSNorm on queries and keys per head, before RoPE (caps logit growth)",
    formula=(
        "q ← RMSNorm(q), k ← RMSNorm(k) per head, learned gains, then RoPE; z = q·kᵀ/√d_h "
        "(per-head QK LayerNorm: Dehghani et al. 2023, arXiv 2302.05442)"
    ),
)
def qk_norm(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.qk_norm": True}


@modification(
    "qk_l2norm",
    family="attention-logits",
    params=params.per_layer,
    duties=("cross_scale",),  # claimed as a stability fix
    citation=Citation("Henry et al.", 2020, "Findings of EMNLP, arXiv 2010.04245"),
    description="QKNorm: L2-normalised queries and keys, a learned scale g in place of 1/√d_h",
    formula="z = g·(q/‖q‖₂)·(k/‖k‖₂)ᵀ per head, g one learned scalar per layer, init log₂(T² − T)",
)
def qk_l2norm(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.score": "qk_l2_softmax"}


@modification(
    "logit_softcap",
    family="attention-logits",
    duties=("cross_scale",),  # claimed as a stability fix: R7 checks that claim
    citation=Citation("Gemma Team", 2024, "Gemma 2, arXiv 2408.00118"),
    description="attention logits soft-capped at ±50",
    formula="z ← c·tanh(z/c), c = 50",
)
def logit_softcap(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.logit_softcap": 50.0}
