"""Attention score functions for the `score` slot: how logits become a weighted sum of values.

The default path computes logits z = q·kᵀ/√d_h explicitly, applies any soft-cap and positional
bias, and asks the subclass for weights; plain softmax instead uses the fused
`scaled_dot_product_attention` whenever nothing needs the explicit logits.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from archaudit.config import ModelConfig
from archaudit.model.context import AttnMask
from archaudit.registry import Registry

SCORES: Registry[type[ScoreFunction]] = Registry("score function")


class ScoreFunction(nn.Module):
    def __init__(self, cfg: ModelConfig, n_heads: int) -> None:
        super().__init__()
        self.softcap = cfg.attention.logit_softcap

    def logits(self, q: torch.Tensor, k: torch.Tensor, mask: AttnMask) -> torch.Tensor:
        z = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (B, h, T, T)
        if self.softcap is not None:
            z = self.softcap * torch.tanh(z / self.softcap)  # Gemma 2 soft-capping
        return z if mask.bias is None else z + mask.bias

    def weights(self, z: torch.Tensor, mask: AttnMask) -> torch.Tensor:
        raise NotImplementedError

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: AttnMask
    ) -> torch.Tensor:
        """q, k, v: (B, h, T, d_h) → (B, h, T, d_v)."""
        return self.weights(self.logits(q, k, mask), mask).to(v.dtype) @ v


@SCORES.register("softmax")
class Softmax(ScoreFunction):
    """softmax(z) over the visible keys (Vaswani et al. 2017): the baseline."""

    def weights(self, z: torch.Tensor, mask: AttnMask) -> torch.Tensor:
        return torch.softmax(z.masked_fill(~mask.allowed, float("-inf")), dim=-1)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: AttnMask
    ) -> torch.Tensor:
        if self.softcap is not None:
            return super().forward(q, k, v, mask)
        if mask.causal_only:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.additive(q.dtype))


@SCORES.register("qk_l2_softmax")
class QKL2Softmax(Softmax):
    """softmax(g·q̂·k̂ᵀ), q̂ = q/‖q‖₂ and k̂ = k/‖k‖₂ per head, one learned scalar g per layer in
    place of 1/√d_h, init g₀ = log₂(T² − T) with T the context length (Henry et al. 2020,
    "Query-Key Normalization for Transformers", arXiv 2010.04245). Normalising after RoPE is
    the same as before it: a rotation keeps the norm."""

    decay: ClassVar[dict[str, bool]] = {"g": False}

    def __init__(self, cfg: ModelConfig, n_heads: int) -> None:
        super().__init__(cfg, n_heads)
        T = cfg.context_length
        self.g = nn.Parameter(torch.tensor(math.log2(max(T * T - T, 2))))

    def logits(self, q: torch.Tensor, k: torch.Tensor, mask: AttnMask) -> torch.Tensor:
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        return super().logits(q * (self.g * math.sqrt(q.shape[-1])), k, mask)  # base: ÷√d_h

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: AttnMask
    ) -> torch.Tensor:
        return ScoreFunction.forward(self, q, k, v, mask)  # explicit logits: g is a tensor


@SCORES.register("softpick")
class Softpick(ScoreFunction):
    """ReLU(e^z − 1) / Σ_j |e^{z_j} − 1| (Zuhri et al. 2025, arXiv 2504.20966).

    Computed max-shifted for stability: ReLU(e^{z−m} − e^{−m}) / (Σ|e^{z_j−m} − e^{−m}| + ε).
    Rows may sum to less than 1, or to 0: attention is not forced onto a sink token.
    """

    eps = 1e-8  # as the reference code (zaydzuhri/softpick-attention)

    def weights(self, z: torch.Tensor, mask: AttnMask) -> torch.Tensor:
        z = z.float().masked_fill(~mask.allowed, float("-inf"))
        m = z.amax(dim=-1, keepdim=True).detach()  # row max over visible keys, as the paper's code
        shifted = torch.exp(z - m) - torch.exp(-m)  # masked keys: 0 - e^{-m}
        shifted = shifted.masked_fill(~mask.allowed, 0.0)
        return F.relu(shifted) / (shifted.abs().sum(-1, keepdim=True) + self.eps)


@SCORES.register("ssmax")
class ScalableSoftmax(ScoreFunction):
    """softmax((s·log n)·z), n = keys visible to the query, s learnable per head
    (Nakanishi 2025, arXiv 2501.19399): keeps attention peaked as n grows."""

    decay: ClassVar[dict[str, bool]] = {"s": False}

    def __init__(self, cfg: ModelConfig, n_heads: int) -> None:
        super().__init__(cfg, n_heads)
        self.s = nn.Parameter(torch.full((n_heads,), cfg.attention.ssmax_init))

    def weights(self, z: torch.Tensor, mask: AttnMask) -> torch.Tensor:
        scale = self.s[:, None, None] * torch.log(mask.visible)  # (h, T, 1)
        return torch.softmax((scale * z).masked_fill(~mask.allowed, float("-inf")), dim=-1)


@SCORES.register("sigmoid")
class SigmoidAttention(ScoreFunction):
    """σ(z + b), one fixed b = −log n with n the maximum sequence length (model.context_length),
    no normalisation across keys: the paper's form (Ramapuram et al. 2024, arXiv 2409.04431) and
    Apple's reference code (apple/ml-sigmoid-attention). Entry `sigmoid_attn`."""

    def __init__(self, cfg: ModelConfig, n_heads: int) -> None:
        super().__init__(cfg, n_heads)
        self.b = -math.log(cfg.context_length)

    def bias(self, z: torch.Tensor, mask: AttnMask) -> torch.Tensor | float:
        return self.b

    def weights(self, z: torch.Tensor, mask: AttnMask) -> torch.Tensor:
        return torch.sigmoid(z + self.bias(z, mask)).masked_fill(~mask.allowed, 0.0)


@SCORES.register("sigmoid_per_position")
class PerPositionSigmoidAttention(SigmoidAttention):
    """σ(z + b_i), b_i = −log n_i with n_i the keys query i may see (i + 1 under a plain causal
    mask): a per-query bias, not the paper's fixed one. Entry `sigmoid_attn_per_position`."""

    def bias(self, z: torch.Tensor, mask: AttnMask) -> torch.Tensor | float:
        return -torch.log(mask.visible.to(z.dtype))  # (T, 1)


@SCORES.register("sink_softmax")
class SinkSoftmax(ScoreFunction):
    """softmax over the keys plus one always-present zero logit ("softmax + 1"), so a head can
    attend to nothing (the "zero sink" of Xiao et al. 2023, StreamingLLM, §3.3; Miller 2023)."""

    def sink(self, z: torch.Tensor) -> torch.Tensor:
        return torch.zeros((), device=z.device, dtype=z.dtype)

    def weights(self, z: torch.Tensor, mask: AttnMask) -> torch.Tensor:
        z = z.masked_fill(~mask.allowed, float("-inf"))
        sink = self.sink(z).expand(*z.shape[:-1], 1)
        return torch.softmax(torch.cat((z, sink), dim=-1), dim=-1)[..., :-1]


@SCORES.register("sink_softmax_learned")
class LearnedSinkSoftmax(SinkSoftmax):
    """Sink softmax whose sink logit is learned per head: the attention sinks of gpt-oss
    (OpenAI 2025, arXiv 2508.10925), a per-head logit in the normaliser, not a sink token."""

    decay: ClassVar[dict[str, bool]] = {"sink_logit": False}

    def __init__(self, cfg: ModelConfig, n_heads: int) -> None:
        super().__init__(cfg, n_heads)
        self.sink_logit = nn.Parameter(torch.zeros(n_heads))

    def sink(self, z: torch.Tensor) -> torch.Tensor:
        return self.sink_logit.to(z.dtype)[:, None, None]  # (h, 1, 1)


@SCORES.register("talking_heads")
class TalkingHeads(ScoreFunction):
    """Mix logits across heads before the softmax and weights after it with learned h×h maps
    (Shazeer et al. 2020, arXiv 2003.02436). Identity at init, so it starts as the baseline.
    The h×h maps are mixing weights: not weight-decayed."""

    decay: ClassVar[dict[str, bool]] = {"pre": False, "post": False}

    def __init__(self, cfg: ModelConfig, n_heads: int) -> None:
        super().__init__(cfg, n_heads)
        self.pre = nn.Parameter(torch.eye(n_heads))
        self.post = nn.Parameter(torch.eye(n_heads))

    def weights(self, z: torch.Tensor, mask: AttnMask) -> torch.Tensor:
        z = torch.einsum("bhts,hg->bgts", z, self.pre.to(z.dtype))
        w = torch.softmax(z.masked_fill(~mask.allowed, float("-inf")), dim=-1)
        return torch.einsum("bhts,hg->bgts", w, self.post.to(w.dtype))
