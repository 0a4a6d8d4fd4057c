"""How sublayers join the residual stream: the `residual` slot (one rule per sublayer) and the
`stream` slot (what the stream itself is).

A connection rule splits into `branch(x)` — what the sublayer contributes — and `combine(x, b)`
— how that joins the stream. Plain streams call `forward` = combine(x, branch(x)); streams that
restructure the residual path (hyper-connections, attention residuals) use `branch` alone, so
they only accept rules whose combine is plain addition (`adds_plainly`); `build_model` refuses
any other pairing. The same holds for a block variant that adds the branches itself (the
parallel block).

Every module here lists its own parameters in `decay` (see `model/decay.py`): norm gains, gates
and mixing weights are never weight-decayed.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from archaudit.config import ModelConfig
from archaudit.model.context import ForwardContext
from archaudit.model.norms import LayerNorm, make_norm
from archaudit.registry import Registry

CONNECTIONS: Registry[type[Connection]] = Registry("residual rule")
STREAMS: Registry[type[Stream]] = Registry("residual stream")


class Connection(nn.Module):
    """Pre-norm by default: x + F(Norm(x))."""

    init_gain = 1.0  # multiplies the init std of the sublayer's weights (DeepNorm's β)
    adds_plainly: ClassVar[bool] = True
    """combine(x, b) = x + b: a stream that adds branches itself loses nothing of this rule."""

    def __init__(self, cfg: ModelConfig, sublayer: nn.Module) -> None:
        super().__init__()
        self.sublayer = sublayer
        self.norm = make_norm(cfg.norm, cfg.d_model)

    def branch(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        return self._call(self.norm(x), ctx)

    def combine(self, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x + b

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        return self.combine(x, self.branch(x, ctx))

    def _call(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        return self.sublayer(x, ctx)


@CONNECTIONS.register("pre")
class PreNorm(Connection):
    """x + F(Norm(x)) (Xiong et al. 2020): the baseline."""


@CONNECTIONS.register("post")
class PostNorm(Connection):
    """Norm(x + F(x)): the 2017 design; unstable when deep (Xiong et al. 2020)."""

    adds_plainly = False

    def branch(self, x, ctx):  # type: ignore[no-untyped-def]
        return self._call(x, ctx)

    def combine(self, x, b):  # type: ignore[no-untyped-def]
        return self.norm(x + b)


@CONNECTIONS.register("sandwich")
class SandwichNorm(Connection):
    """x + Norm_out(F(Norm_in(x))) (Ding et al. 2021, CogView; Peri-LN, Kim et al. 2025)."""

    def __init__(self, cfg: ModelConfig, sublayer: nn.Module) -> None:
        super().__init__(cfg, sublayer)
        self.norm_out = make_norm(cfg.norm, cfg.d_model)

    def branch(self, x, ctx):  # type: ignore[no-untyped-def]
        return self.norm_out(self._call(self.norm(x), ctx))


@CONNECTIONS.register("deepnorm")
class DeepNorm(Connection):
    """Norm(α·x + F(x)), α = (2N)^{1/4}, sublayer init scaled by β = (8N)^{−1/4}, N layers
    (Wang et al. 2022, arXiv 2203.00555, decoder-only constants)."""

    adds_plainly = False

    def __init__(self, cfg: ModelConfig, sublayer: nn.Module) -> None:
        super().__init__(cfg, sublayer)
        self.alpha = (2 * cfg.n_layers) ** 0.25
        self.init_gain = (8 * cfg.n_layers) ** -0.25

    def branch(self, x, ctx):  # type: ignore[no-untyped-def]
        return self._call(x, ctx)

    def combine(self, x, b):  # type: ignore[no-untyped-def]
        return self.norm(self.alpha * x + b)


@CONNECTIONS.register("residual_after_norm")
class ResidualAfterNorm(Connection):
    """Z = Norm(x); Z + F(Z): the residual continues from the normalised stream. HybridNorm's
    FFN sublayer (Zhuo et al. 2025, arXiv 2503.04598, figure 2(d); reference code flags
    `ffn_norm = true`, `ffn_residual_after_norm = true`)."""

    adds_plainly = False

    def combine(self, x, b):  # type: ignore[no-untyped-def]
        return self.norm(x) + b


@CONNECTIONS.register("unnormed")
class Unnormed(Connection):
    """x + F(x) with no norm around the sublayer: HybridNorm's attention sublayer, which
    normalises Q, K and V inside attention instead (Zhuo et al. 2025, arXiv 2503.04598)."""

    def __init__(self, cfg: ModelConfig, sublayer: nn.Module) -> None:
        nn.Module.__init__(self)
        self.sublayer = sublayer

    def branch(self, x, ctx):  # type: ignore[no-untyped-def]
        return self._call(x, ctx)


@CONNECTIONS.register("rezero")
class ReZero(Unnormed):
    """x + α·F(x), α a learned scalar starting at 0, no norm (Bachlechner et al. 2020)."""

    def __init__(self, cfg: ModelConfig, sublayer: nn.Module) -> None:
        super().__init__(cfg, sublayer)
        self.alpha = nn.Parameter(torch.zeros(1))

    decay: ClassVar[dict[str, bool]] = {"alpha": False}

    def branch(self, x, ctx):  # type: ignore[no-untyped-def]
        return self.alpha * self._call(x, ctx)


@CONNECTIONS.register("layerscale")
class LayerScale(Connection):
    """x + diag(γ)·F(Norm(x)), γ a learned d-vector starting small (Touvron et al. 2021,
    CaiT, arXiv 2103.17239)."""

    def __init__(self, cfg: ModelConfig, sublayer: nn.Module) -> None:
        super().__init__(cfg, sublayer)
        self.gamma = nn.Parameter(torch.full((cfg.d_model,), cfg.residual.layerscale_init))

    decay: ClassVar[dict[str, bool]] = {"gamma": False}

    def branch(self, x, ctx):  # type: ignore[no-untyped-def]
        return self.gamma * self._call(self.norm(x), ctx)


# ---------------------------------------------------------------------------------------------
# streams: run the blocks over the embedded input (B, T, d) → (B, T, d)


class Stream(nn.Module):
    calls_blocks: ClassVar[bool] = True
    """False for streams that run each rule's `branch` themselves: they never call a block's
    forward (so no block variant) nor a rule's `combine`."""

    def __init__(self, cfg: ModelConfig, n_sublayers: int) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, blocks: nn.ModuleList, ctx: ForwardContext) -> torch.Tensor:
        for block in blocks:
            x = block(x, ctx)
        return x


@STREAMS.register("standard")
class StandardStream(Stream):
    """x_l = Block_l(x_{l−1}): one residual stream, each block calling its own forward."""


def connections_of(blocks: nn.ModuleList) -> list[nn.Module]:
    """The connections of all blocks in call order: attention, MLP, attention, ..."""
    return [c for block in blocks for c in block.connections()]


@STREAMS.register("hyper")
class HyperConnections(Stream):
    """n parallel residual streams H ∈ ℝ^{n×d} (Zhu et al. 2024, arXiv 2409.19606).

    Per sublayer: input h = α_mᵀH, update H ← A_rᵀH + β ⊗ F(h). Static α_m, A_r, β plus a dynamic
    part tanh-projected from the normalised streams, scaled by learned s_α, s_β (init 0.01,
    projections init 0, so training starts from the static mixing). Static init: α_m one-hot on
    stream (l mod n), A_r = I, β = 1 — with n = 1 this is exactly the baseline. The dynamic part
    reads the streams through a LayerNorm, as the paper's pseudo-code does, whatever model.norm
    is. All of it is mixing weights: none is weight-decayed.
    """

    calls_blocks = False
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

    def forward(self, x, blocks, ctx):  # type: ignore[no-untyped-def]
        H = x.unsqueeze(2).expand(*x.shape[:2], self.n, x.shape[-1])  # (B, T, n, d)
        for i, connection in enumerate(connections_of(blocks)):
            Hn = self.norms[i](H)
            alpha = self.static_alpha[i] + self.scale_alpha[i] * torch.tanh(
                Hn @ self.dynamic_alpha[i]
            )  # (B, T, n, n+1)
            beta = self.static_beta[i] + self.scale_beta[i] * torch.tanh(
                Hn @ self.dynamic_beta[i]
            )  # (B, T, n)
            h = torch.einsum("btn,btnd->btd", alpha[..., 0], H)  # α_mᵀH
            out = connection.branch(h, ctx)  # (B, T, d)
            H = torch.einsum("btnm,btnd->btmd", alpha[..., 1:], H)  # A_rᵀH
            H = H + beta.unsqueeze(-1) * out.unsqueeze(2)  # + β ⊗ F(h)
        return H.sum(dim=2)


@STREAMS.register("attn_res")
class AttentionResiduals(Stream):
    """x_l = Σ_{i<l} α_{i→l}·v_i with α = softmax_i(w_lᵀ·RMSNorm(v_i)); v_0 is the embedding,
    v_i the earlier sublayer outputs (Kimi Team 2026, arXiv 2603.15031). One query vector w_l
    per sublayer plus one for the output; w = 0 at init, i.e. a uniform average. The queries are
    mixing weights: not weight-decayed."""

    calls_blocks = False
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

    def forward(self, x, blocks, ctx):  # type: ignore[no-untyped-def]
        values = [x]
        for i, connection in enumerate(connections_of(blocks)):
            values.append(connection.branch(self.mix(values, self.queries[i]), ctx))
        return self.mix(values, self.queries[-1])


def residual_init_std(cfg: ModelConfig) -> float:
    """Output projections of residual branches: std/√(2L) when `model.init.scale_residual`
    (GPT-2)."""
    init = cfg.init
    return init.std / math.sqrt(2 * cfg.n_layers) if init.scale_residual else init.std
