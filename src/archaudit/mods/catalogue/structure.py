"""Structure: the model's shape (depth, heads, K/V sharing, windows, context length).

These come first in catalogue order, so that later modifications read the reshaped sizes.
"""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig, replace_paths
from archaudit.errors import ConfigError
from archaudit.mods import params
from archaudit.mods.registry import Citation, DeltaFunction, ReferenceCheck, modification


def _deep_narrow(cfg: ModelConfig) -> dict[str, Any]:
    # Block parameters grow as L·d², so 2L layers at d/√2 keep them (d stays a multiple of 2h).
    step = 2 * cfg.n_heads
    width = max(1, round(cfg.d_model / 2**0.5 / step)) * step
    return {"n_layers": 2 * cfg.n_layers, "d_model": width}


modification(
    "deep_narrow",
    family="structure",
    params=params.reshaped(lambda cfg: replace_paths(cfg, _deep_narrow(cfg), section="model")),
    citation=Citation("Narang et al.", 2021, "EMNLP, arXiv 2102.11972"),
    description="depth at fixed parameters: twice the layers at d/√2 width",
    formula="L ← 2L, d ← 2h·round(d/(√2·2h)); non-embedding parameters ≈ unchanged",
)(_deep_narrow)


def _head_width(width: int) -> DeltaFunction:
    def delta(cfg: ModelConfig) -> dict[str, Any]:
        if cfg.d_model % width:
            raise ConfigError(
                f"head_width_{width}: model.d_model = {cfg.d_model} is not a multiple of {width}"
            )
        return {"n_heads": cfg.d_model // width, "head_dim": None}

    return delta


for _width in (32, 64):
    modification(
        f"head_width_{_width}",
        family="structure",
        citation=Citation("Bhojanapalli et al.", 2020, "ICML, arXiv 2002.07028"),
        description=f"heads {_width} dims wide: d/{_width} heads, same attention parameters",
        formula=f"h ← d/{_width}, d_h = {_width}",
    )(_head_width(_width))


@modification(
    "gqa",
    family="structure",
    params=params.gqa,
    citation=Citation("Ainslie et al.", 2023, "EMNLP, arXiv 2305.13245"),
    description="grouped-query attention: each pair of query heads shares one K/V head",
    formula="n_kv_heads = h/2; query head i reads K/V head ⌊i/2⌋",
)
def gqa(cfg: ModelConfig) -> dict[str, Any]:
    if cfg.n_heads % 2:
        raise ConfigError(f"gqa groups heads in pairs: model.n_heads = {cfg.n_heads} is odd")
    return {"n_kv_heads": cfg.n_heads // 2}


@modification(
    "swa",
    family="structure",
    citation=Citation("Beltagy et al.", 2020, "Longformer, arXiv 2004.05150"),
    description="sliding-window attention (window T/4) in 3 of every 4 layers",
    formula="query i sees key j iff 0 ≤ i − j < w, w = T/4, in layers l with (l + 1) mod 4 ≠ 0",
)
def swa(cfg: ModelConfig) -> dict[str, Any]:
    # Applied before short_context (catalogue order), so the window is the same number of
    # tokens in the long- and short-context cells of a factorial.
    return {"attention.window": max(1, cfg.context_length // 4), "attention.global_every": 4}


@modification(
    "short_context",
    family="structure",
    citation=Citation(
        "Bertsch et al.",
        2026,
        "Cracks in the Foundation: Seemingly Minor Architectural Choices Impact Long Context "
        "Extension (OlmPool, Ai2; allenai.org/blog/olmpool)",
    ),
    description="pretraining context halved; tokens per step unchanged (twice the sequences)",
    formula="T ← T/2; recipe.batch_tokens unchanged",
)
def short_context(cfg: ModelConfig) -> dict[str, Any]:
    return {"context_length": max(1, cfg.context_length // 2)}


@modification(
    "mla",
    family="structure",
    duties=("downstream",),
    params=params.latent_attention,
    citation=Citation("DeepSeek-AI", 2024, "DeepSeek-V2, arXiv 2405.04434"),
    description="multi-head latent attention: K/V from a 4·d_h-wide latent, decoupled RoPE keys",
    formula=(
        "c = RMSNorm(x·W_DKV) (r = 4·d_h); [k_C; v] = c·W_UKV per head; k_R = RoPE(x·W_KR) shared "
        "by all heads; q = [q_C; RoPE(q_R)]; softmax([q_C; q_R]·[k_C; k_R]ᵀ/√(d_h + d_R))·v"
    ),
    check=ReferenceCheck(
        variant="DeepSeek-V2-Lite's form: no query latent (a query latent is model.attention."
        "latent_q_rank, also checked); rotate-half RoPE pairs",
        reference="transformers' DeepseekV3Attention (rope_interleave=False, eager attention)",
        max_abs_diff=1e-12,
        test="tests/mods/test_mods_formulas_hf.py",
    ),
)
def mla(cfg: ModelConfig) -> dict[str, Any]:
    # The latent module has no GQA, QK(V)-norm, gate or value residual (what the cache stores
    # is the latent): claiming their baseline values makes such a pair a named conflict.
    return {
        "attention.name": "latent",
        "n_kv_heads": None,
        "attention.qk_norm": False,
        "attention.qkv_norm": False,
        "attention.gate": None,
        "attention.value_residual": False,
    }
