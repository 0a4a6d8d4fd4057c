"""What every layer of one forward pass shares: masks, the positional scheme, first-layer values,
and the auxiliary losses sublayers add to the objective (MoE routers).

Built once per forward by the model, so masks and biases are computed once, not per layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

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
    _masks: dict[int | None, AttnMask] = field(default_factory=dict)

    def mask(self, window: int | None) -> AttnMask:
        if window not in self._masks:
            i = torch.arange(self.T, device=self.device)
            allowed = i[:, None] >= i[None, :]
            if window is not None:
                allowed &= (i[:, None] - i[None, :]) < window
            bias = self.position.bias(self.T, self.device)
            causal_only = bias is None and (window is None or window >= self.T)
            self._masks[window] = AttnMask(allowed, bias, causal_only)
        return self._masks[window]
