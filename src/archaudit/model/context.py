"""What every layer of one forward pass shares: masks, the positional scheme, first-layer values,
and the auxiliary losses sublayers add to the objective (MoE routers).

Built once per forward by the model, so masks and biases are computed once, not per layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from archaudit.model.kv_cache import KVCache
from archaudit.model.position import Position


@dataclass
class AttnMask:
    """Which keys each query may see, plus any additive logit bias (ALiBi)."""

    allowed: torch.Tensor  # (T, T) bool, True where query i may attend to key j
    bias: torch.Tensor | None  # (h, T, T) float, or None
    causal_only: bool  # allowed is the plain causal mask and there is no bias

    @property
    def visible(self) -> torch.Tensor:
        """n: the number of keys each query may attend to, shape (T, 1)."""
        return self.allowed.sum(-1, keepdim=True).float()

    def additive(self, dtype: torch.dtype) -> torch.Tensor:
        """Bias with −inf on masked keys, for scaled_dot_product_attention: (h or 1, T, T)."""
        neg = torch.zeros(self.allowed.shape, dtype=dtype, device=self.allowed.device)
        neg.masked_fill_(~self.allowed, float("-inf"))
        return neg if self.bias is None else neg + self.bias.to(dtype)


@dataclass
class ForwardContext:
    T: int
    device: torch.device
    position: Position
    v_first: torch.Tensor | None = None  # first layer's values, for value residual
    aux_losses: list[torch.Tensor] = field(default_factory=list)  # MoE routers' terms
    cache: KVCache | None = None
    """Incremental decoding only (`model/kv_cache.py`): keys and values of earlier tokens."""
    _masks: dict[int | None, AttnMask] = field(default_factory=dict)

    @property
    def start(self) -> int:
        """Position of this pass's first token: the tokens already cached."""
        return self.cache.length if self.cache is not None else 0

    def remember(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The keys and values to attend to: these, or with a cache all so far (B, h, S, d)."""
        return (k, v) if self.cache is None else self.cache.extend(k, v)

    def mask(self, window: int | None) -> AttnMask:
        """(T, S) for T queries at positions start.. over S = start + T keys."""
        if window not in self._masks:
            start, S = self.start, self.start + self.T
            i = torch.arange(S, device=self.device)
            allowed = (i[:, None] >= i[None, :])[start:]
            if window is not None:
                allowed &= (i[start:, None] - i[None, :]) < window
            bias = self.position.bias(S, self.device)
            bias = bias[:, start:] if bias is not None else None
            causal_only = start == 0 and bias is None and (window is None or window >= self.T)
            self._masks[window] = AttnMask(allowed, bias, causal_only)
        return self._masks[window]
