"""Objective and head: what the model predicts and what the loss adds."""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.mods import params
from archaudit.mods.registry import Citation, modification


@modification(
    "z_loss",
    family="objective",
    citation=Citation("Chowdhery et al.", 2022, "PaLM, arXiv 2204.02311"),
    description="an auxiliary loss keeping the softmax normaliser near 1",
    formula="loss += 1e-4·(log Σ_v e^{z_v})², averaged over positions",
)
def z_loss(cfg: ModelConfig) -> dict[str, Any]:
    return {"objective.z_loss": 1e-4}


@modification(
    "mtp",
    family="objective",
    params=params.mtp_head,
    citation=Citation("Gloeckle et al.", 2024, "ICML, arXiv 2404.19737"),
    description="one extra head predicting token t+2 (auxiliary loss, weight 0.3)",
    formula="loss += 0.3·CE(head(Norm(W·h_t)), x_{t+2})",
)
def mtp(cfg: ModelConfig) -> dict[str, Any]:
    return {"objective.mtp_heads": 1}


@modification(
    "tied_embeddings",
    family="objective",
    params=params.tied,
    citation=Citation("Press & Wolf", 2017, "EACL, arXiv 1608.05859"),
    description="the output head is the input embedding",
    formula="logits = h·Eᵀ",
)
def tied_embeddings(cfg: ModelConfig) -> dict[str, Any]:
    return {"head.tie_embeddings": True}


@modification(
    "mos",
    family="objective",
    params=params.mixture_of_softmaxes,
    citation=Citation("Yang et al.", 2018, "ICLR, arXiv 1711.03953"),
    description="mixture of 4 softmaxes at the output (breaks the softmax bottleneck)",
    formula="p = Σ_k π_k·softmax(tanh(h·W_k)·Eᵀ), π = softmax(h·W_π)",
)
def mos(cfg: ModelConfig) -> dict[str, Any]:
    return {"head.name": "mos"}
