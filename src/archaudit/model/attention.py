"""Attention modules for the `attention` slot.

`Attention` is the baseline multi-head attention with optional grouped K/V heads, QK-norm,
sliding windows, an output gate and value residual; the score function is its own slot
(`scores.py`). `DifferentialAttention` subtracts two softmax maps (Ye et al. 2024).
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import nn

from archaudit.config import ModelConfig
from archaudit.errors import ConfigError
from archaudit.model.context import ForwardContext
from archaudit.model.init import Init
from archaudit.model.norms import RMSNorm
from archaudit.model.position import rotates
from archaudit.model.scores import SCORES
from archaudit.registry import Registry

ATTENTIONS: Registry[type[nn.Module]] = Registry("attention")


def layer_window(cfg: ModelConfig, layer: int) -> int | None:
    """Sliding window of a layer: every `global_every`-th layer keeps full attention."""
    options = cfg.attention
    if options.window is None or (layer + 1) % options.global_every == 0:
        return None
    return options.window


@ATTENTIONS.register("standard")
class Attention(nn.Module):
    takes_logit_bias: ClassVar[bool] = True
    """Adds a position slot's logit bias (ALiBi) to every head's logits."""
    kv_cache: ClassVar[bool] = True
    """Keeps its keys and values through `ctx.remember` (model/kv_cache.py)."""
    decay: ClassVar[dict[str, bool]] = {"value_lambdas": False}

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.n_heads, self.n_kv, self.d_h = cfg.n_heads, cfg.kv_heads, cfg.dim_head
        self.window = layer_window(cfg, layer)
        self.rotates = rotates(cfg, layer)
        self.q_proj = nn.Linear(cfg.d_model, self.n_heads * self.d_h, bias=False)
        self.k_proj = nn.Linear(cfg.d_model, self.n_kv * self.d_h, bias=False)
        self.v_proj = nn.Linear(cfg.d_model, self.n_kv * self.d_h, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.d_h, cfg.d_model, bias=False)
        self.score = SCORES.get(cfg.attention.score)(cfg, self.n_heads)
        # Optional pieces, each from its own paper; absent ones cost nothing.
        options, eps = cfg.attention, cfg.norm.eps
        norm_q, norm_v = options.qk_norm or options.qkv_norm, options.qkv_norm
        self.q_norm = RMSNorm(self.d_h, eps) if norm_q else None
        self.k_norm = RMSNorm(self.d_h, eps) if norm_q else None
        self.v_norm = RMSNorm(self.d_h, eps) if norm_v else None
        gate_width = {"elementwise": self.n_heads * self.d_h, "headwise": self.n_heads}
        self.gate = (
            nn.Linear(cfg.d_model, gate_width[options.gate], bias=False) if options.gate else None
        )
        self.value_lambdas = (
            nn.Parameter(torch.tensor([0.5, 0.5])) if options.value_residual and layer > 0 else None
        )

    def init_weights(self, init: Init) -> None:
        init.query_key(self.q_proj, self.k_proj)
        init.matrix(self.v_proj)
        init.output(self.o_proj)
        init.module(self.score)
        if self.gate is not None:
            init.matrix(self.gate)

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.d_h).transpose(1, 2)  # (B, h, T, d_h)
        k = self.k_proj(x).view(B, T, self.n_kv, self.d_h).transpose(1, 2)  # (B, h_kv, T, d_h)
        v = self.v_proj(x).view(B, T, self.n_kv, self.d_h).transpose(1, 2)
        q, k, v = self._transform(q, k, v, ctx)  # k, v: every cached token too
        y = self.score(q, k, v, ctx.mask(self.window))  # (B, h, T, d_h)
        y = y.transpose(1, 2)  # (B, T, h, d_h)
        if self.gate is not None:
            # Gated attention (Qiu et al. 2025, arXiv 2505.06708): y ⊙ σ(x·W_g) before W_O.
            g = torch.sigmoid(self.gate(x)).view(B, T, self.n_heads, -1)
            y = y * g
        return self.o_proj(y.reshape(B, T, -1))

    def _transform(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ctx: ForwardContext
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """QK(V)-norm before RoPE, value residual, RoPE, then K/V heads repeated for GQA."""
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        if self.v_norm is not None:
            v = self.v_norm(v)
        if ctx.v_first is None:
            ctx.v_first = v
        elif self.value_lambdas is not None:
            # ResFormer (Zhou et al. 2024, arXiv 2410.17897): V_l ← λ1·V_l + λ2·V_1.
            v = self.value_lambdas[0] * v + self.value_lambdas[1] * ctx.v_first
        if self.rotates:
            q, k = ctx.position.rotate(q, k, ctx.start)
        k, v = ctx.remember(k, v)
        if self.n_kv != self.n_heads:
            k = k.repeat_interleave(self.n_heads // self.n_kv, dim=1)
            v = v.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        return q, k, v


def diff_lambda_init(layer: int) -> float:
    """λ_init = 0.8 − 0.6·exp(−0.3·(l − 1)) for 1-based layer l (Ye et al. 2024)."""
    return 0.8 - 0.6 * math.exp(-0.3 * layer)


@ATTENTIONS.register("differential")
class DifferentialAttention(nn.Module):
    """(softmax(Q1K1ᵀ/√d) − λ·softmax(Q2K2ᵀ/√d))·V (Ye et al. 2024, arXiv 2410.05258).

    Heads are halved to keep the projection sizes: h/2 heads, each with two d_h-wide query/key
    pairs and a 2·d_h-wide value. λ = exp(λq1·λk1) − exp(λq2·λk2) + λ_init; each head's output
    is RMS-normalised and scaled by (1 − λ_init), as in the reference code (microsoft/unilm).
    A per-head logit bias (ALiBi) has no defined meaning for a head pair, so it is refused, as
    are the standard module's options this one does not implement.
    """

    takes_logit_bias = False
    kv_cache = True
    decay: ClassVar[dict[str, bool]] = {"lambdas": False}

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        if cfg.n_heads % 2 or cfg.kv_heads != cfg.n_heads:
            raise ConfigError(
                f"model.attention.name = 'differential' needs an even model.n_heads (got "
                f"{cfg.n_heads}) and no grouped K/V heads (model.n_kv_heads = {cfg.n_kv_heads})"
            )
        options = cfg.attention
        unsupported = [
            k for k in ("qk_norm", "qkv_norm", "gate", "value_residual") if getattr(options, k)
        ]
        if unsupported:
            raise ConfigError(
                f"model.attention.name = 'differential' does not implement "
                f"model.attention.{unsupported[0]} = {getattr(options, unsupported[0])!r}; unset "
                "it or use model.attention.name = 'standard'"
            )
        self.h, self.d_h = cfg.n_heads // 2, cfg.dim_head
        d_inner = cfg.n_heads * self.d_h
        self.window = layer_window(cfg, layer)
        self.rotates = rotates(cfg, layer)
        self.q_proj = nn.Linear(cfg.d_model, d_inner, bias=False)
        self.k_proj = nn.Linear(cfg.d_model, d_inner, bias=False)
        self.v_proj = nn.Linear(cfg.d_model, d_inner, bias=False)
        self.o_proj = nn.Linear(d_inner, cfg.d_model, bias=False)
        self.score = SCORES.get(cfg.attention.score)(cfg, self.h)
        self.lambda_init = diff_lambda_init(layer)
        self.lambdas = nn.Parameter(torch.randn(4, self.d_h) * 0.1)  # rows λq1, λk1, λq2, λk2
        self.out_norm = RMSNorm(2 * self.d_h, cfg.norm.eps)

    def init_weights(self, init: Init) -> None:
        init.query_key(self.q_proj, self.k_proj)
        init.matrix(self.v_proj)
        init.output(self.o_proj)
        init.module(self.score)

    def lam(self) -> torch.Tensor:
        q1, k1, q2, k2 = self.lambdas
        return torch.exp((q1 * k1).sum()) - torch.exp((q2 * k2).sum()) + self.lambda_init

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, 2 * self.h, self.d_h).transpose(1, 2)  # (B, 2h', T, d_h)
        k = self.k_proj(x).view(B, T, 2 * self.h, self.d_h).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, 2 * self.d_h).transpose(1, 2)  # (B, h', T, 2d_h)
        if self.rotates:
            q, k = ctx.position.rotate(q, k, ctx.start)
        k, v = ctx.remember(k, v)
        mask = ctx.mask(self.window)
        # Heads (2i, 2i+1) form pair i: the map of the odd one is subtracted.
        y1 = self.score(q[:, 0::2], k[:, 0::2], v, mask)
        y2 = self.score(q[:, 1::2], k[:, 1::2], v, mask)
        y = self.out_norm(y1 - self.lam().to(y1.dtype) * y2) * (1.0 - self.lambda_init)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))
