"""Normalisation layers for the `norm` slot. Gains and biases are never weight-decayed."""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from archaudit.config import NormConfig
from archaudit.registry import Registry

NORMS: Registry[type[nn.Module]] = Registry("norm")


@NORMS.register("rmsnorm")
class RMSNorm(nn.Module):
    """x / rms(x) · g (Zhang & Sennrich 2019): the baseline's norm, no bias, no centring."""

    decay: ClassVar[dict[str, bool]] = {"weight": False}

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)


@NORMS.register("layernorm")
class LayerNorm(nn.Module):
    """(x − mean) / std · g + b (Ba et al. 2016): one extra d-vector (the bias) per norm."""

    decay: ClassVar[dict[str, bool]] = {"weight": False, "bias": False}

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


def make_norm(cfg: NormConfig, dim: int) -> nn.Module:
    """The `model.norm` layer over `dim` features."""
    return NORMS.get(cfg.name)(dim, cfg.eps)
