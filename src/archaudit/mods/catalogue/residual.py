"""Residual path: how sublayer outputs join the stream, and the stream itself.

R7 applies to every entry here: train at two or more depths and watch the gradient norm.
"""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.mods import params
from archaudit.mods.registry import Citation, DeltaFunction, modification

# Hyper-connections and attention residuals run a pre-norm block's two terms themselves, never
# its forward, so they claim the pre-norm rule: any other rule would silently be ignored.
_STREAM_RULE = {"residual.name": "pre", "residual.mlp": None}


def _hyper_connections(n: int) -> DeltaFunction:
    return lambda cfg: {"stream.name": "hyper", "stream.n_streams": n, **_STREAM_RULE}


for _n in (2, 4):
    modification(
        f"hyper_connections_{_n}",
        family="residual",
        params=params.hyper_connections(_n),
        citation=Citation("Zhu et al.", 2024, "ICLR 2025, arXiv 2409.19606"),
        description=f"{_n} parallel residual streams with learned static + dynamic mixing",
        formula="h = α_mᵀH; H ← A_rᵀH + β ⊗ F(h); α, A, β static + s·tanh(LayerNorm(H)·W)",
    )(_hyper_connections(_n))


@modification(
    "attn_res",
    family="residual",
    params=params.attn_res,
    citation=Citation("Kimi Team", 2026, "Attention Residuals, arXiv 2603.15031"),
    description="each sublayer reads a softmax-weighted sum of all earlier outputs",
    formula="x_l = Σ_{i<l} α_{i→l}·v_i, α = softmax_i(w_lᵀ·RMSNorm(v_i)), v_0 = embedding",
)
def attn_res(cfg: ModelConfig) -> dict[str, Any]:
    return {"stream.name": "attn_res", **_STREAM_RULE}


@modification(
    "value_residual",
    family="residual",
    params=params.value_residual,
    duties=("downstream",),  # it changes what attention returns: R6 as for attention-output
    citation=Citation("Zhou et al.", 2024, "ResFormer, arXiv 2410.17897"),
    description="every layer's values mixed with the first layer's values",
    formula="V_l ← λ1·V_l + λ2·V_1, λ learned, init 0.5",
)
def value_residual(cfg: ModelConfig) -> dict[str, Any]:
    return {"attention.value_residual": True}


def cait_init(n_layers: int) -> float:
    """LayerScale's γ init by depth (CaiT, Touvron et al. 2021, section 2.1)."""
    return 0.1 if n_layers <= 18 else 1e-5 if n_layers <= 24 else 1e-6


@modification(
    "layerscale",
    family="residual",
    params=params.per_sublayer_vector,
    citation=Citation("Touvron et al.", 2021, "CaiT, ICCV, arXiv 2103.17239"),
    description="a learned per-channel scale on each sublayer output, starting small",
    formula="x ← x + diag(γ)·F(Norm(x)), γ init 0.1 (L ≤ 18), 1e-5 (L ≤ 24), 1e-6",
)
def layerscale(cfg: ModelConfig) -> dict[str, Any]:
    return {
        "residual.name": "layerscale",
        "residual.mlp": None,
        "residual.layerscale_init": cait_init(cfg.n_layers),
    }


@modification(
    "rezero",
    family="residual",
    params=params.rezero,
    citation=Citation("Bachlechner et al.", 2020, "UAI 2021, arXiv 2003.04887"),
    description="no norm in the sublayers; each output scaled by a learned scalar from 0",
    formula="x ← x + α·F(x), α init 0",
)
def rezero(cfg: ModelConfig) -> dict[str, Any]:
    return {"residual.name": "rezero", "residual.mlp": None}


@modification(
    "no_residual_scaling",
    family="residual",
    citation=Citation("Radford et al.", 2019, "GPT-2, OpenAI technical report"),
    description="residual output projections initialised like every other matrix",
    formula="W_O, W_2 ~ N(0, σ²) instead of N(0, (σ/√(2L))²)",
)
def no_residual_scaling(cfg: ModelConfig) -> dict[str, Any]:
    return {"init.scale_residual": False}


@modification(
    "parallel_block",
    family="residual",
    citation=Citation(
        "Chowdhery et al.",
        2022,
        "PaLM, arXiv 2204.02311, section 2 (after GPT-J, Wang & Komatsuzaki 2021; two norms as "
        "GPT-NeoX-20B, Black et al. 2022, arXiv 2204.06745)",
    ),
    description="attention and MLP read the same layer input and are added in parallel",
    formula="x ← x + Attn(Norm₁(x)) + MLP(Norm₂(x)) instead of two sequential residual steps",
)
def parallel_block(cfg: ModelConfig) -> dict[str, Any]:
    # The block adds both branches itself, so it claims the pre-norm rule (as the streams do),
    # and a stream that calls blocks: hyper-connections would never run it.
    return {"block.name": "parallel", "stream.name": "standard", **_STREAM_RULE}
