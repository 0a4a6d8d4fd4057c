"""The `stream` slot: what the residual stream is, and how the blocks run over it.

The standard stream is one residual stream that each block updates in turn. Hyper-connections
and attention residuals restructure the stream itself: they take each block's two branches —
Attn(Norm(x)) and MLP(Norm(x)), the terms a pre-norm block adds — and mix them in their own way,
so they never call a block's forward. They therefore need pre-norm sequential blocks, and
refuse any other residual rule or block layout (`check`), whose norms or order they would
silently drop.

Every module here lists its own parameters in `decay` (see `model/decay.py`): mixing weights
are never weight-decayed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

import torch
import torch.nn.functional as F
from torch import nn

from archaudit.config import ModelConfig
from archaudit.errors import ConfigError
from archaudit.model.context import ForwardContext
from archaudit.model.norms import LayerNorm
from archaudit.registry import Registry

Branch = Callable[[torch.Tensor, ForwardContext], torch.Tensor]
"""One sublayer's term of the residual sum, as a function of the stream: Attn(Norm(x))."""


class Layer(Protocol):
    """What a stream needs of a block (`transformer.Block`): to run it, or its two branches."""

    def __call__(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor: ...

    def branches(self) -> tuple[Branch, Branch]: ...


STREAMS: Registry[type[Stream]] = Registry("residual stream")


class Stream(nn.Module):
    """Runs the blocks over the embedded input: (B, T, d) → (B, T, d)."""

    def __init__(self, cfg: ModelConfig, n_sublayers: int) -> None:
        super().__init__()

    @classmethod
    def check(cls, cfg: ModelConfig) -> None:
        """Refuse a config whose blocks this stream cannot run (any, for the standard stream)."""

    def forward(
        self, x: torch.Tensor, blocks: Sequence[Layer], ctx: ForwardContext
    ) -> torch.Tensor:
        for block in blocks:
            x = block(x, ctx)
        return x


@STREAMS.register("standard")
class StandardStream(Stream):
    """x_l = Block_l(x_{l−1}): one residual stream, each block calling its own forward."""


class BranchStream(Stream):
    """A stream that adds each sublayer's branch itself, between its own mixing steps."""

    @classmethod
    def check(cls, cfg: ModelConfig) -> None:
        """Only pre-norm sequential blocks: their branches are all that such a stream runs."""
        owner = f"model.stream.name = {cfg.stream.name!r}"
        if cfg.block.name != "sequential":
            raise ConfigError(
                f"{owner} cannot use model.block.name = {cfg.block.name!r}: the stream runs each "
                "sublayer itself and never calls a block (use model.stream.name = 'standard' or "
                "model.block.name = 'sequential')"
            )
        residual = cfg.residual
        key, rule = ("name", residual.name) if residual.name != "pre" else ("mlp", residual.mlp)
        if rule not in (None, "pre"):
            raise ConfigError(
                f"{owner} cannot use model.residual.{key} = {rule!r}: the stream adds each "
                "sublayer's pre-norm branch itself and would never apply the rule (use 'pre', or "
                "model.stream.name = 'standard')"
            )


def branches_of(blocks: Sequence[Layer]) -> list[Branch]:
    """The branches of all blocks in call order: attention, MLP, attention, ..."""
    return [branch for block in blocks for branch in block.branches()]


@STREAMS.register("hyper")
class HyperConnections(BranchStream):
    """n parallel residual streams H ∈ ℝ^{n×d} (Zhu et al. 2024, arXiv 2409.19606).

    Per sublayer: input h = α_mᵀH, update H ← A_rᵀH + β ⊗ F(h). Static α_m, A_r, β plus a dynamic
    part tanh-projected from the normalised streams, scaled by learned s_α, s_β (init 0.01,
    projections init 0, so training starts from the static mixing). Static init: α_m one-hot on
    stream (l mod n), A_r = I, β = 1 — with n = 1 this is exactly the baseline. The dynamic part
    reads the streams through a LayerNorm, as the paper's pseudo-code does, whatever model.norm
    is. All of it is mixing weights: none is weight-decayed.
    """

    decay: ClassVar[dict[str, bool]] = dict.fromkeys(
        (
            "static_alpha",
            "static_beta",
            "dynamic_alpha",
            "dynamic_beta",
            "scale_alpha",
            "scale_beta",
        ),
        False,
    )

    def __init__(self, cfg: ModelConfig, n_sublayers: int) -> None:
        super().__init__(cfg, n_sublayers)
        n, d = cfg.stream.n_streams, cfg.d_model
        self.n = n
        alpha = torch.zeros(n_sublayers, n, n + 1)  # column 0: α_m, columns 1..n: A_r
        for layer in range(n_sublayers):
            alpha[layer, layer % n, 0] = 1.0
            alpha[layer, :, 1:] = torch.eye(n)
        self.static_alpha = nn.Parameter(alpha)
        self.static_beta = nn.Parameter(torch.ones(n_sublayers, n))
        self.dynamic_alpha = nn.Parameter(torch.zeros(n_sublayers, d, n + 1))
        self.dynamic_beta = nn.Parameter(torch.zeros(n_sublayers, d))
        self.scale_alpha = nn.Parameter(torch.full((n_sublayers,), 0.01))
        self.scale_beta = nn.Parameter(torch.full((n_sublayers,), 0.01))
        self.norms = nn.ModuleList(LayerNorm(d, cfg.norm.eps) for _ in range(n_sublayers))

    def forward(
        self, x: torch.Tensor, blocks: Sequence[Layer], ctx: ForwardContext
    ) -> torch.Tensor:
        H = x.unsqueeze(2).expand(*x.shape[:2], self.n, x.shape[-1])  # (B, T, n, d)
        for i, branch in enumerate(branches_of(blocks)):
            Hn = self.norms[i](H)
            alpha = self.static_alpha[i] + self.scale_alpha[i] * torch.tanh(
                Hn @ self.dynamic_alpha[i]
            )  # (B, T, n, n+1)
            beta = self.static_beta[i] + self.scale_beta[i] * torch.tanh(
                Hn @ self.dynamic_beta[i]
            )  # (B, T, n)
            h = torch.einsum("btn,btnd->btd", alpha[..., 0], H)  # α_mᵀH
            out = branch(h, ctx)  # (B, T, d)
            H = torch.einsum("btnm,btnd->btmd", alpha[..., 1:], H)  # A_rᵀH
            H = H + beta.unsqueeze(-1) * out.unsqueeze(2)  # + β ⊗ F(h)
        return H.sum(dim=2)


@STREAMS.register("attn_res")
class AttentionResiduals(BranchStream):
    """x_l = Σ_{i<l} α_{i→l}·v_i with α = softmax_i(w_lᵀ·RMSNorm(v_i)); v_0 is the embedding,
    v_i the earlier sublayer outputs (Kimi Team 2026, arXiv 2603.15031). One query vector w_l
    per sublayer plus one for the output; w = 0 at init, i.e. a uniform average. The queries are
    mixing weights: not weight-decayed."""

    decay: ClassVar[dict[str, bool]] = {"queries": False}

    def __init__(self, cfg: ModelConfig, n_sublayers: int) -> None:
        super().__init__(cfg, n_sublayers)
        self.queries = nn.Parameter(torch.zeros(n_sublayers + 1, cfg.d_model))
        self.eps = cfg.norm.eps

    def mix(self, values: list[torch.Tensor], query: torch.Tensor) -> torch.Tensor:
        V = torch.stack(values, dim=2)  # (B, T, l, d)
        keys = F.rms_norm(V, (V.shape[-1],), eps=self.eps)
        alpha = torch.softmax(keys @ query, dim=-1)  # (B, T, l)
        return torch.einsum("btl,btld->btd", alpha, V)

    def forward(
        self, x: torch.Tensor, blocks: Sequence[Layer], ctx: ForwardContext
    ) -> torch.Tensor:
        values = [x]
        for i, branch in enumerate(branches_of(blocks)):
            values.append(branch(self.mix(values, self.queries[i]), ctx))
        return self.mix(values, self.queries[-1])
