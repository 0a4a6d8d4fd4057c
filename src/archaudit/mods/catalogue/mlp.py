"""MLP: the feed-forward sublayer's activation and gating."""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.mods import params
from archaudit.mods.registry import Citation, modification


@modification(
    "geglu",
    family="mlp",
    citation=Citation("Shazeer", 2020, "GLU Variants Improve Transformer, arXiv 2002.05202"),
    description="GELU-gated MLP instead of SiLU-gated",
    formula="(GELU(x·W1) ⊙ x·W3)·W2",
)
def geglu(cfg: ModelConfig) -> dict[str, Any]:
    return {"mlp.name": "geglu"}


@modification(
    "reglu",
    family="mlp",
    citation=Citation("Shazeer", 2020, "GLU Variants Improve Transformer, arXiv 2002.05202"),
    description="ReLU-gated MLP instead of SiLU-gated",
    formula="(ReLU(x·W1) ⊙ x·W3)·W2",
)
def reglu(cfg: ModelConfig) -> dict[str, Any]:
    return {"mlp.name": "reglu"}


@modification(
    "relu2",
    family="mlp",
    params=params.plain_mlp,
    citation=Citation("So et al.", 2021, "Primer, NeurIPS, arXiv 2109.08668"),
    description="non-gated MLP with squared ReLU, hidden 4d",
    formula="ReLU(x·W1)²·W2, W1: d → 4d",
)
def relu2(cfg: ModelConfig) -> dict[str, Any]:
    return {"mlp.name": "relu2"}


@modification(
    "gelu_mlp",
    family="mlp",
    params=params.plain_mlp,
    citation=Citation("Radford et al.", 2019, "GPT-2, OpenAI technical report"),
    description="non-gated GELU MLP, hidden 4d (the GPT-2 design)",
    formula="GELU(x·W1)·W2, W1: d → 4d",
)
def gelu_mlp(cfg: ModelConfig) -> dict[str, Any]:
    return {"mlp.name": "gelu"}
