"""Positional schemes for the `position` slot.

A scheme may act in three places, each a no-op by default: `embed` adds absolute positions to
the token embedding, `rotate` transforms queries and keys (RoPE), `bias` adds to the attention
logits (ALiBi). One instance is shared by all layers.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import nn

from archaudit.config import ModelConfig
from archaudit.errors import ConfigError
from archaudit.model.init import embedding
from archaudit.registry import Registry

POSITIONS: Registry[type[Position]] = Registry("position")


class Position(nn.Module):
    logit_bias: ClassVar[bool] = False
    """True when `bias` adds to the logits, which an attention module must then accept."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg

    def embed(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x: (B, T, d), its first token at position `start` (> 0 only with a KV cache)."""
        return x

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, start: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return q, k  # (B, h, T, d_h) each, at positions start..start+T-1

    def bias(self, T: int, device: torch.device) -> torch.Tensor | None:
        return None  # (h, T, T) added to the logits, or None


def rotates(cfg: ModelConfig, layer: int) -> bool:
    """Whether attention in `layer` (0-based) asks the position slot to rotate: all layers but
    every `position.nope_every`-th (Llama 4's NoPE layers, transformers' `no_rope_layers`)."""
    every = cfg.position.nope_every
    return every is None or (layer + 1) % every != 0


@POSITIONS.register("rope")
class RoPE(Position):
    """Rotary embeddings (Su et al. 2021): rotate pairs of dims by angle pos·θ_i,
    θ_i = base^(−2i/d_rot). Scores then depend only on relative position. `rope_fraction` < 1
    rotates only the first fraction of each head's dims (partial RoPE, GPT-NeoX)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        # Tables per rotated width (latent attention rotates a narrower part than d_h), device
        # and compute dtype; angles computed in float64 on the CPU, so .to(bf16) cannot round
        # them (they are not buffers).
        self._cache: dict[tuple[int, torch.device, torch.dtype], tuple[torch.Tensor, ...]] = {}

    def rotated(self, width: int) -> int:
        """How many of a head's `width` dims rotate: the even part of width·rope_fraction."""
        return int(width * self.cfg.position.rope_fraction) // 2 * 2

    def _cos_sin(
        self, T: int, rot: int, device: torch.device, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, cos) and (−sin, sin) over the rotated width, rows 0..T−1: the tables of
        `_rotate`'s full-width form."""
        key = (rot, device, dtype)
        cached = self._cache.get(key)
        if cached is None or cached[0].shape[0] < T:
            # Built outside inference_mode even when called inside it: an inference tensor could
            # not be saved for backward by a later training forward that reuses the cache.
            with torch.inference_mode(False), torch.no_grad():
                base = self.cfg.position.rope_base
                inv_freq = base ** (-torch.arange(0, rot, 2, dtype=torch.float64) / rot)
                freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
                cos, sin = freqs.cos(), freqs.sin()
                tables = (torch.cat((cos, cos), -1), torch.cat((-sin, sin), -1))
                cached = tuple(t.to(device=device, dtype=dtype) for t in tables)
                self._cache[key] = cached  # (T, rot) each
        return cached[0][:T], cached[1][:T]

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, start: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate the leading rotated(width) dims of q and k, whatever their head width."""
        rot = self.rotated(q.shape[-1])
        if rot == 0:
            return q, k
        dtype = torch.promote_types(q.dtype, torch.float32)  # bf16 rotates in float32
        cos, sin = self._cos_sin(start + q.shape[-2], rot, q.device, dtype)
        cos, sin = cos[start:], sin[start:]
        return self._rotate(q, cos, sin), self._rotate(k, cos, sin)

    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        # Rotate-half convention: dims (i, i + rot/2) form a pair, (x1, x2) → (x1·cos − x2·sin,
        # x2·cos + x1·sin). Written full width, x·(cos, cos) + (x2, x1)·(−sin, sin): the same
        # bits (negation is exact), in three kernels on whole rows instead of six on strided
        # halves, 30% less time for the rotation forward and backward at the demo's sizes.
        rot = cos.shape[-1]
        x_rot, x_pass = x[..., :rot].to(cos.dtype), x[..., rot:]
        x1, x2 = x_rot.chunk(2, dim=-1)
        rotated = (x_rot * cos + torch.cat((x2, x1), dim=-1) * sin).type_as(x)
        return torch.cat((rotated, x_pass), dim=-1) if x_pass.shape[-1] else rotated


@POSITIONS.register("nope")
class NoPE(Position):
    """No positional signal: the causal mask alone breaks symmetry (Kazemnejad et al. 2023)."""


@POSITIONS.register("alibi")
class ALiBi(Position):
    """z_ij −= m_h·(i − j) with slopes m_h = 2^(−8h/H), h = 1..H; no RoPE (Press et al. 2022)."""

    logit_bias = True

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        self.slopes: torch.Tensor
        self.register_buffer("slopes", alibi_slopes(cfg.n_heads), persistent=False)

    def bias(self, T: int, device: torch.device) -> torch.Tensor:
        pos = torch.arange(T, device=device)
        distance = (pos[:, None] - pos[None, :]).clamp(min=0).float()  # (T, T), i − j
        return -self.slopes.to(device)[:, None, None] * distance  # (h, T, T)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    return torch.tensor([2.0 ** (-8.0 * h / n_heads) for h in range(1, n_heads + 1)])


@POSITIONS.register("sinusoidal")
class Sinusoidal(Position):
    """Fixed sin/cos absolute positions added to the embedding (Vaswani et al. 2017). As in the
    paper the token embedding is first multiplied by √d: with a 0.02-std init the unit-amplitude
    table would otherwise drown the tokens."""

    def embed(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        T, d = x.shape[1], x.shape[2]
        x = x * math.sqrt(d)
        pos = torch.arange(start, start + T, device=x.device, dtype=torch.float32)[:, None]
        div = torch.exp(torch.arange(0, d, 2, device=x.device) * (-math.log(10000.0) / d))
        pe = torch.zeros(T, d, device=x.device)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div[: d // 2])
        return x + pe.type_as(x)


@POSITIONS.register("learned")
class Learned(Position):
    """A learned T×d table of absolute positions (GPT-2); cannot extrapolate past T."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        self.table = embedding(cfg.context_length, cfg.d_model)

    def embed(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        end = start + x.shape[1]
        if self.table.num_embeddings < end:
            raise ConfigError(
                f"learned positions cover model.context_length = {self.table.num_embeddings} "
                f"tokens; a sequence of {end} cannot be embedded (rope/alibi/nope extrapolate)"
            )
        return x + self.table.weight[start:end]
