"""Multi-head latent attention for the `attention` slot (`model.attention.name = "latent"`).

DeepSeek-V2 (DeepSeek-AI 2024, arXiv 2405.04434, section 2.1): keys and values are
up-projected from one r-wide latent c = RMSNorm(x·W_DKV) per token (what a KV cache stores),
and RoPE acts on a separate d_R-wide part: each head's query gets its own rotated part, all heads
share one rotated key k_R = RoPE(x·W_KR). Scores are [q_C; q_R]·[k_C; k_R] / √(d_h + d_R).
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from archaudit.config import ModelConfig
from archaudit.errors import ConfigError
from archaudit.model.attention import ATTENTIONS, layer_window
from archaudit.model.context import ForwardContext
from archaudit.model.init import Init
from archaudit.model.norms import RMSNorm
from archaudit.model.position import rotates
from archaudit.model.scores import SCORES

UNSUPPORTED = ("qk_norm", "qkv_norm", "gate", "value_residual")


def latent_sizes(cfg: ModelConfig) -> tuple[int, int | None, int]:
    """(KV latent r, query latent r_q or None, RoPE width d_R) with their defaults filled in."""
    options, d_h = cfg.attention, cfg.dim_head
    rope = options.latent_rope_dim or max(2, d_h // 2 // 2 * 2)
    return options.latent_rank or 4 * d_h, options.latent_q_rank, rope


@ATTENTIONS.register("latent")
class LatentAttention(nn.Module):
    """Projection names follow transformers' DeepseekV3Attention: q_a/q_b (or q_proj),
    kv_a (latent and shared RoPE key), kv_b (per-head keys and values), o_proj."""

    takes_logit_bias: ClassVar[bool] = False
    kv_cache: ClassVar[bool] = True

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        options = cfg.attention
        unsupported = [k for k in UNSUPPORTED if getattr(options, k)]
        if unsupported or cfg.kv_heads != cfg.n_heads:
            key = f"attention.{unsupported[0]}" if unsupported else "n_kv_heads"
            raise ConfigError(
                f"model.attention.name = 'latent' does not implement model.{key}; unset it or "
                "use model.attention.name = 'standard'"
            )
        d, h, d_h = cfg.d_model, cfg.n_heads, cfg.dim_head
        self.h, self.d_h = h, d_h
        self.rank, q_rank, self.d_rope = latent_sizes(cfg)
        eps = cfg.norm.eps
        q_width = h * (d_h + self.d_rope)
        self.q_proj: nn.Module
        if q_rank is None:
            self.q_proj = nn.Linear(d, q_width, bias=False)
        else:
            self.q_proj = nn.Sequential(
                nn.Linear(d, q_rank, bias=False),
                RMSNorm(q_rank, eps),
                nn.Linear(q_rank, q_width, bias=False),
            )
        self.kv_a = nn.Linear(d, self.rank + self.d_rope, bias=False)
        self.kv_norm = RMSNorm(self.rank, eps)
        self.kv_b = nn.Linear(self.rank, h * 2 * d_h, bias=False)
        self.o_proj = nn.Linear(h * d_h, d, bias=False)
        self.score = SCORES.get(options.score)(cfg, h)
        self.window = layer_window(cfg, layer)
        self.rotates = rotates(cfg, layer)

    def init_weights(self, init: Init) -> None:
        """Every query projection (the query latent's too) is a query: never scaled by a gain."""
        init.query_key(*(m for m in self.q_proj.modules() if isinstance(m, nn.Linear)))
        init.matrix(self.kv_a, self.kv_b)
        init.output(self.o_proj)
        init.module(self.score)

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.h, -1).transpose(1, 2)  # (B, h, T, d_h + d_R)
        q_content, q_rope = q.split([self.d_h, self.d_rope], dim=-1)
        latent, k_rope = self.kv_a(x).split(
            [self.rank, self.d_rope], dim=-1
        )  # (B, T, r), (B, T, d_R)
        kv = self.kv_b(self.kv_norm(latent)).view(B, T, self.h, 2 * self.d_h).transpose(1, 2)
        k_content, v = kv.split([self.d_h, self.d_h], dim=-1)  # (B, h, T, d_h) each
        k_rope = k_rope.unsqueeze(1)  # one RoPE key for all heads: (B, 1, T, d_R)
        if self.rotates:
            q_rope, k_rope = ctx.position.rotate(q_rope, k_rope, ctx.start)
        q = torch.cat((q_content, q_rope), dim=-1)
        k = torch.cat((k_content, k_rope.expand(B, self.h, T, self.d_rope)), dim=-1)
        k, v = ctx.remember(k, v)
        y = self.score(q, k, v, ctx.mask(self.window))  # (B, h, T, d_h)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))
