"""Block variants: layers that join their sublayers to the residual stream differently from the
pre-norm baseline (`transformer.Block`). Each overrides `forward` and builds what it needs.

`model.residual.name` picks a sequential variant from `RESIDUALS` (and `model.residual.mlp` a
pair, for HybridNorm's two rules); `model.block.name = "parallel"` picks the parallel layout from
`BLOCKS`.

A variant that builds other modules than the baseline's registers them in a set order: each
scale before its sublayer, each norm after it. Its parameters are then listed as they were
before these variants existed, so gradient clipping sums their norms in the same order and
training stays bit-identical.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from archaudit.config import ModelConfig
from archaudit.model.context import ForwardContext
from archaudit.model.init import Init
from archaudit.model.norms import make_norm
from archaudit.model.transformer import BLOCKS, RESIDUALS, Block, build_attention, build_mlp


@BLOCKS.register("parallel")
class ParallelBlock(Block):
    """x + Attn(Norm₁(x)) + MLP(Norm₂(x)): both sublayers read the layer's input, so their
    input projections can run as one matmul (GPT-J, Wang & Komatsuzaki 2021; PaLM, Chowdhery
    et al. 2022, arXiv 2204.02311, section 2). Each sublayer keeps its own norm, as GPT-NeoX's
    `use_parallel_residual` (Black et al. 2022, arXiv 2204.06745); GPT-J shares one."""

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        return x + self.attn(self.attn_norm(x), ctx) + self.mlp(self.mlp_norm(x), ctx)


@RESIDUALS.register("post")
class PostNormBlock(Block):
    """Norm(x + F(x)): the 2017 design; unstable when deep (Xiong et al. 2020)."""

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        x = self.attn_norm(x + self.attn(x, ctx))
        x = self.mlp_norm(x + self.mlp(x, ctx))
        return x


@RESIDUALS.register("deepnorm")
class DeepNormBlock(Block):
    """Norm(α·x + F(x)), α = (2N)^{1/4}, the sublayers' weights but W_Q and W_K drawn ×β,
    β = (8N)^{−1/4}, N layers (Wang et al. 2022, arXiv 2203.00555, decoder-only constants)."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__(cfg, layer)
        self.alpha = (2 * cfg.n_layers) ** 0.25
        self.beta = (8 * cfg.n_layers) ** -0.25

    def init_weights(self, init: Init) -> None:
        scaled = init.scaled(self.beta)
        scaled.module(self.attn)
        scaled.module(self.mlp)

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        f = self.attn(x, ctx)
        x = self.attn_norm(self.alpha * x + f)
        f = self.mlp(x, ctx)
        x = self.mlp_norm(self.alpha * x + f)
        return x


@RESIDUALS.register("residual_after_norm")
class ResidualAfterNormBlock(Block):
    """Z = Norm(x); Z + F(Z): the residual continues from the normalised stream (HybridNorm's
    FFN rule, here for both sublayers)."""

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        # Norm(x) is computed twice rather than kept: the gradients then sum in the order of the
        # runs trained before this block existed, bit for bit.
        f = self.attn(self.attn_norm(x), ctx)
        x = self.attn_norm(x) + f
        f = self.mlp(self.mlp_norm(x), ctx)
        return self.mlp_norm(x) + f


@RESIDUALS.register("sandwich")
class SandwichBlock(Block):
    """x + Norm_out(F(Norm_in(x))) (Ding et al. 2021, CogView; Peri-LN, Kim et al. 2025)."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        nn.Module.__init__(self)  # its own modules, in parameter order
        self.attn = build_attention(cfg, layer)
        self.attn_norm = make_norm(cfg.norm, cfg.d_model)
        self.attn_out_norm = make_norm(cfg.norm, cfg.d_model)
        self.mlp = build_mlp(cfg)
        self.mlp_norm = make_norm(cfg.norm, cfg.d_model)
        self.mlp_out_norm = make_norm(cfg.norm, cfg.d_model)

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        x = x + self.attn_out_norm(self.attn(self.attn_norm(x), ctx))
        x = x + self.mlp_out_norm(self.mlp(self.mlp_norm(x), ctx))
        return x


class Scale(nn.Module):
    """A learned elementwise gain on a sublayer's output: ReZero's α, LayerScale's γ."""

    decay: ClassVar[dict[str, bool]] = {"weight": False}

    def __init__(self, start: torch.Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(start)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * x


@RESIDUALS.register("layerscale")
class LayerScaleBlock(Block):
    """x + diag(γ)·F(Norm(x)), γ a learned d-vector starting small (Touvron et al. 2021,
    CaiT, arXiv 2103.17239)."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        nn.Module.__init__(self)  # its own modules, in parameter order
        start = cfg.residual.layerscale_init
        self.attn_scale = Scale(torch.full((cfg.d_model,), start))
        self.attn = build_attention(cfg, layer)
        self.attn_norm = make_norm(cfg.norm, cfg.d_model)
        self.mlp_scale = Scale(torch.full((cfg.d_model,), start))
        self.mlp = build_mlp(cfg)
        self.mlp_norm = make_norm(cfg.norm, cfg.d_model)

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        x = x + self.attn_scale(self.attn(self.attn_norm(x), ctx))
        x = x + self.mlp_scale(self.mlp(self.mlp_norm(x), ctx))
        return x


@RESIDUALS.register("unnormed")
class UnnormedBlock(Block):
    """x + F(x) with no norm around either sublayer."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        nn.Module.__init__(self)  # no norms
        self.attn = build_attention(cfg, layer)
        self.mlp = build_mlp(cfg)

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        x = x + self.attn(x, ctx)
        x = x + self.mlp(x, ctx)
        return x


@RESIDUALS.register("rezero")
class ReZeroBlock(Block):
    """x + α·F(x), α a learned scalar starting at 0, no norm (Bachlechner et al. 2020)."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        nn.Module.__init__(self)  # no norms; each scale before its sublayer
        self.attn_scale = Scale(torch.zeros(1))
        self.attn = build_attention(cfg, layer)
        self.mlp_scale = Scale(torch.zeros(1))
        self.mlp = build_mlp(cfg)

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        x = x + self.attn_scale(self.attn(x, ctx))
        x = x + self.mlp_scale(self.mlp(x, ctx))
        return x


@RESIDUALS.register("unnormed+residual_after_norm")
class HybridNormBlock(Block):
    """Y = X + Attn(X), Z = Norm(Y), X′ = Z + FFN(Z): HybridNorm (Zhuo et al. 2025, arXiv
    2503.04598, figure 2(d); reference code flags `attn_norm = false`, `ffn_norm = true`,
    `ffn_residual_after_norm = true`). The attention has no input norm: it normalises Q, K and
    V itself (`model.attention.qkv_norm`)."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        nn.Module.__init__(self)  # no attention norm
        self.attn = build_attention(cfg, layer)
        self.mlp = build_mlp(cfg)
        self.mlp_norm = make_norm(cfg.norm, cfg.d_model)

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        x = x + self.attn(x, ctx)
        f = self.mlp(self.mlp_norm(x), ctx)
        return self.mlp_norm(x) + f  # Z = Norm(Y) twice, as `ResidualAfterNormBlock` says why


@RESIDUALS.register("unnormed+post")
class HybridNormPostBlock(HybridNormBlock):
    """HybridNorm with a textbook Post-Norm FFN: Y = X + Attn(X), X′ = Norm(Y + FFN(Y))."""

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        x = x + self.attn(x, ctx)
        return self.mlp_norm(x + self.mlp(x, ctx))
