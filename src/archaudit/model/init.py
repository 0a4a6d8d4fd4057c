"""Weight initialisation of the baseline recipe: normal(0, σ) everywhere, residual output
projections at σ/√(2L) (GPT-2), and each connection rule's own gain (DeepNorm's β)."""

from __future__ import annotations

import torch
from torch import nn

from archaudit.config import ModelConfig
from archaudit.model.residual import Connection, residual_init_std


@torch.no_grad()
def init_weights(model: nn.Module, cfg: ModelConfig) -> None:
    for module in model.modules():
        if isinstance(module, nn.Linear | nn.Embedding):
            std = residual_init_std(cfg) if getattr(module, "residual_out", False) else cfg.init.std
            nn.init.normal_(module.weight, mean=0.0, std=std)
    for module in model.modules():
        if isinstance(module, Connection) and module.init_gain != 1.0:
            exempt = {
                getattr(module.sublayer, "q_proj", None),
                getattr(module.sublayer, "k_proj", None),
            }
            for linear in module.sublayer.modules():
                if isinstance(linear, nn.Linear) and linear not in exempt:
                    linear.weight.mul_(module.init_gain)
