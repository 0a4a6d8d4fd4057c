"""Feed-forward blocks for the `mlp` slot."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archaudit.config import ModelConfig
from archaudit.model.init import Init
from archaudit.registry import Registry

MLPS: Registry[type[nn.Module]] = Registry("mlp")


def hidden_width(cfg: ModelConfig, gated: bool) -> int:
    """8/3·d rounded up to a multiple of 16 for gated MLPs (same parameters as a 4·d plain MLP),
    4·d otherwise; `mlp_hidden` overrides both."""
    if cfg.mlp.hidden is not None:
        return cfg.mlp.hidden
    return -(-(8 * cfg.d_model) // 3 // 16) * 16 if gated else 4 * cfg.d_model


class GatedMLP(nn.Module):
    """(act(x·W1) ⊙ x·W3)·W2 (Shazeer 2020, "GLU Variants Improve Transformer")."""

    def act(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        hidden = hidden_width(cfg, gated=True)
        self.w1 = nn.Linear(cfg.d_model, hidden, bias=False)
        self.w3 = nn.Linear(cfg.d_model, hidden, bias=False)
        self.w2 = nn.Linear(hidden, cfg.d_model, bias=False)

    def init_weights(self, init: Init) -> None:
        init.matrix(self.w1, self.w3)
        init.output(self.w2)

    def forward(self, x: torch.Tensor, ctx: object = None) -> torch.Tensor:
        return self.w2(self.act(self.w1(x)) * self.w3(x))


@MLPS.register("swiglu")
class SwiGLU(GatedMLP):
    """SiLU-gated: the baseline."""


@MLPS.register("geglu")
class GeGLU(GatedMLP):
    """GELU-gated (Shazeer 2020)."""

    def act(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


@MLPS.register("reglu")
class ReGLU(GatedMLP):
    """ReLU-gated (Shazeer 2020)."""

    def act(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x)


class PlainMLP(nn.Module):
    """act(x·W1)·W2 with hidden 4·d: the 2017/GPT-2 design."""

    def act(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        hidden = hidden_width(cfg, gated=False)
        self.w1 = nn.Linear(cfg.d_model, hidden, bias=False)
        self.w2 = nn.Linear(hidden, cfg.d_model, bias=False)

    def init_weights(self, init: Init) -> None:
        init.matrix(self.w1)
        init.output(self.w2)

    def forward(self, x: torch.Tensor, ctx: object = None) -> torch.Tensor:
        return self.w2(self.act(self.w1(x)))


@MLPS.register("gelu")
class GeluMLP(PlainMLP):
    """GELU, not gated (Radford et al. 2019, GPT-2)."""


@MLPS.register("relu2")
class ReLU2MLP(PlainMLP):
    """ReLU(x)², not gated (So et al. 2021, Primer, arXiv 2109.08668)."""

    def act(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x).square()
