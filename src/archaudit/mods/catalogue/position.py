"""Position: how the model knows where a token is."""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.mods import params
from archaudit.mods.registry import Citation, modification


@modification(
    "alibi",
    family="position",
    citation=Citation("Press et al.", 2022, "ICLR, arXiv 2108.12409"),
    description="a linear distance penalty on the logits instead of RoPE",
    formula="z_ij −= m_h·(i − j), m_h = 2^(−8h/H), h = 1..H",
)
def alibi(cfg: ModelConfig) -> dict[str, Any]:
    # ALiBi's bias is one slope per head; differential attention's heads are pairs of maps with
    # no defined slope, so claiming the standard module makes alibi+diff_attn a named conflict.
    return {"position.name": "alibi", "attention.name": "standard"}


@modification(
    "nope",
    family="position",
    citation=Citation("Kazemnejad et al.", 2023, "NeurIPS, arXiv 2305.19466"),
    description="no positional signal; the causal mask alone breaks the symmetry",
    formula="z_ij = q_i·k_j/√d_h (no rotation, no bias, no position embedding)",
)
def nope(cfg: ModelConfig) -> dict[str, Any]:
    return {"position.name": "nope"}


@modification(
    "irope",
    family="position",
    duties=("downstream",),
    citation=Citation(
        "Meta AI",
        2025,
        "The Llama 4 herd (ai.meta.com/blog/llama-4-multimodal-intelligence); transformers' "
        "Llama4TextConfig.no_rope_layers",
    ),
    description="interleaved NoPE layers: every 4th layer attends without RoPE (Llama 4)",
    formula="layer l rotates q, k iff (l + 1) mod n ≠ 0, n = min(4, L); other layers z = q·kᵀ/√d_h",
)
def irope(cfg: ModelConfig) -> dict[str, Any]:
    # n = L for models under 4 layers, so that at least the last layer is a NoPE layer.
    return {"position.name": "rope", "position.nope_every": min(4, cfg.n_layers)}


@modification(
    "partial_rope",
    family="position",
    citation=Citation("Black et al.", 2022, "GPT-NeoX-20B, arXiv 2204.06745"),
    description="RoPE on the first 25% of each head's dimensions only",
    formula="rotate dims [0, d_h/4) by pos·θ_i, θ_i = base^(−2i/(d_h/4)); the rest pass through",
)
def partial_rope(cfg: ModelConfig) -> dict[str, Any]:
    return {"position.name": "rope", "position.rope_fraction": 0.25}


@modification(
    "rope_base_500k",
    family="position",
    citation=Citation("Grattafiori et al.", 2024, "The Llama 3 Herd of Models, arXiv 2407.21783"),
    description="RoPE with base 500000 instead of 10000 (slower rotations)",
    formula="θ_i = 500000^(−2i/d_h)",
)
def rope_base_500k(cfg: ModelConfig) -> dict[str, Any]:
    return {"position.name": "rope", "position.rope_base": 500_000.0}


@modification(
    "sinusoidal",
    family="position",
    citation=Citation("Vaswani et al.", 2017, "NeurIPS, arXiv 1706.03762"),
    description="fixed sin/cos absolute positions added to the embedding, no RoPE",
    formula="x_t += PE_t, PE_t[2i] = sin(t/10000^(2i/d)), PE_t[2i+1] = cos(t/10000^(2i/d))",
)
def sinusoidal(cfg: ModelConfig) -> dict[str, Any]:
    return {"position.name": "sinusoidal"}


@modification(
    "learned_pos",
    family="position",
    params=params.learned_positions,
    citation=Citation("Radford et al.", 2019, "GPT-2, OpenAI technical report"),
    description="a learned table of absolute positions added to the embedding, no RoPE",
    formula="x_t += P_t, P ∈ ℝ^{T×d} learned",
)
def learned_pos(cfg: ModelConfig) -> dict[str, Any]:
    return {"position.name": "learned"}
