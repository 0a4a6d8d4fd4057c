"""Output heads for the `head` slot: hidden states (B, T, d) → logits (B, T, V)."""

from __future__ import annotations

import torch
from torch import nn

from archaudit.config import ModelConfig
from archaudit.registry import Registry

HEADS: Registry[type[nn.Module]] = Registry("head")


@HEADS.register("linear")
class LinearHead(nn.Module):
    """A linear map to the vocabulary; its weight is the input embedding when tied."""

    def __init__(self, cfg: ModelConfig, embedding: nn.Embedding) -> None:
        super().__init__()
        self.proj = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.head.tie_embeddings:
            self.proj.weight = embedding.weight

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.proj(h)


@HEADS.register("mos")
class MixtureOfSoftmaxes(nn.Module):
    """p = Σ_k π_k·softmax(tanh(h·W_k)·Eᵀ), π = softmax(h·W_π): breaks the softmax bottleneck
    (Yang et al. 2018, arXiv 1711.03953). Returns log p, which cross-entropy treats as logits
    because log-softmax leaves a normalised log-distribution unchanged."""

    def __init__(self, cfg: ModelConfig, embedding: nn.Embedding) -> None:
        super().__init__()
        self.k = cfg.head.mos_experts
        self.prior = nn.Linear(cfg.d_model, self.k, bias=False)
        self.experts = nn.Linear(cfg.d_model, self.k * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.head.tie_embeddings:
            self.proj.weight = embedding.weight

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, T, d = h.shape
        log_prior = torch.log_softmax(self.prior(h).float(), dim=-1)  # (B, T, k)
        hk = torch.tanh(self.experts(h)).view(B, T, self.k, d)
        log_p = torch.log_softmax(self.proj(hk).float(), dim=-1)  # (B, T, k, V)
        return torch.logsumexp(log_prior.unsqueeze(-1) + log_p, dim=2)
