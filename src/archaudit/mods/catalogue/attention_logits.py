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
    citation=Citation("Henry et al.", 2020, "Findings of EMNLP, arXiv 2010.04245"),
    description="RMSNorm on queries and keys per head, before RoPE (caps logit growth)",
    formula="q ← RMSNorm(q), k ← RMSNorm(k) per head (Dehghani et al. 2023, arXiv 2302.05442)",
)
def qk_norm(cfg: ModelConfig) -> dict[str, Any]:
    return {"qk_norm": True}


@modification(
    "logit_softcap",
    family="attention-logits",
    citation=Citation("Gemma Team", 2024, "Gemma 2, arXiv 2408.00118"),
    description="attention logits soft-capped at ±50",
    formula="z ← c·tanh(z/c), c = 50",
)
def logit_softcap(cfg: ModelConfig) -> dict[str, Any]:
    return {"logit_softcap": 50.0}
