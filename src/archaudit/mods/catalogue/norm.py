"""Normalisation: where the norms sit and which norm it is.

R7 applies to every entry here: train at two or more depths and watch the gradient norm.
"""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.mods import params
from archaudit.mods.registry import Citation, ReferenceCheck, modification


@modification(
    "post_ln",
    family="norm",
    citation=Citation("Xiong et al.", 2020, "ICML, arXiv 2002.04745"),
    description="Post-LN (the 2017 design): normalise after the residual addition",
    formula="x ← Norm(x + F(x))",
)
def post_ln(cfg: ModelConfig) -> dict[str, Any]:
    return {"residual.name": "post", "residual.mlp": None}


@modification(
    "peri_ln",
    family="norm",
    params=params.sandwich,
    aliases=("sandwich_norm",),
    citation=Citation("Kim et al.", 2025, "Peri-LN, arXiv 2502.02732"),
    description="a norm on each sublayer's input and output (sandwich norm, CogView 2021)",
    formula="x ← x + Norm_out(F(Norm_in(x)))",
)
def peri_ln(cfg: ModelConfig) -> dict[str, Any]:
    return {"residual.name": "sandwich", "residual.mlp": None}


@modification(
    "hybrid_norm",
    family="norm",
    params=params.hybrid_norm,
    citation=Citation("Zhuo et al.", 2025, "HybridNorm, arXiv 2503.04598"),
    description="RMSNorm on Q, K, V per head before RoPE (no attention input norm); the FFN "
    "residual continues from the normalised stream",
    formula="Y = X + Attn(RMSNorm(q), RMSNorm(k), RMSNorm(v)); Z = Norm(Y); X′ = Z + FFN(Z)",
    check=ReferenceCheck(
        variant="HybridNorm: QKV-norm attention, FFN residual from the normalised stream",
        reference="the paper's panel (d) and BryceZhuo/HybridNorm's ffn_residual_after_norm",
        max_abs_diff=5e-16,  # measured 4.4e-16 (one block, random weights and gains)
        test="tests/mods/test_mods_formulas_reference.py",
    ),
)
def hybrid_norm(cfg: ModelConfig) -> dict[str, Any]:
    # The paper's figure 2(d) and its reference code's flags (attn_norm = false, ffn_norm =
    # true, ffn_residual_after_norm = true): the FFN's residual starts from Norm(Y), not Y. Its
    # HybridNorm* variant adds an attention input norm in the first layer only (not built here).
    return {
        "attention.qkv_norm": True,
        "residual.name": "unnormed",
        "residual.mlp": "residual_after_norm",
    }


@modification(
    "hybrid_norm_post",
    family="norm",
    params=params.hybrid_norm,
    citation=Citation(
        "Zhuo et al.", 2025, "HybridNorm, arXiv 2503.04598 (variant: the textbook Post-Norm FFN)"
    ),
    description="hybrid_norm with a textbook Post-Norm FFN, Norm(Y + FFN(Y)): the abstract's "
    "'Post-Norm in the FFN' read literally; not the reference code's rule",
    formula="Y = X + Attn(RMSNorm(q), RMSNorm(k), RMSNorm(v)); X′ = Norm(Y + FFN(Y))",
    check=ReferenceCheck(
        variant="QKV-norm attention with a textbook Post-Norm FFN (not the reference's rule)",
        reference="the paper's equations with X′ = Norm(Y + FFN(Y)) for the FFN",
        max_abs_diff=9e-16,  # measured 8.9e-16
        test="tests/mods/test_mods_formulas_reference.py",
    ),
)
def hybrid_norm_post(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.qkv_norm": True, "residual.name": "unnormed", "residual.mlp": "post"}


@modification(
    "deepnorm",
    family="norm",
    citation=Citation("Wang et al.", 2022, "DeepNet, arXiv 2203.00555"),
    description="Post-LN with an up-weighted residual and down-scaled sublayer init",
    formula="x ← Norm(α·x + F(x)), α = (2L)^{1/4}; W_v, W_O, MLP init ×β, β = (8L)^{−1/4}",
)
def deepnorm(cfg: ModelConfig) -> dict[str, Any]:
    # β replaces the GPT-2 1/√(2L) output scaling: DeepNet derives β for plain init.
    return {"residual.name": "deepnorm", "residual.mlp": None, "init.scale_residual": False}


@modification(
    "layernorm",
    family="norm",
    params=params.layernorm,
    citation=Citation("Ba et al.", 2016, "arXiv 1607.06450"),
    description="LayerNorm (centred, with bias) instead of RMSNorm everywhere",
    formula="Norm(x) = (x − mean(x)) / √(var(x) + ε)·g + b",
)
def layernorm(cfg: ModelConfig) -> dict[str, Any]:
    return {"norm.name": "layernorm"}
