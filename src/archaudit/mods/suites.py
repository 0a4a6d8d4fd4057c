"""Suites: named lists of arms. Every suite starts with the baseline, which an audit needs for
its noise floor (R5) and which is the all-off cell of a factorial."""

from __future__ import annotations

import itertools

from archaudit.errors import ConfigError, did_you_mean
from archaudit.mods.arms import resolve_arm
from archaudit.names import BASELINE

# Arms named in the public summaries of the 2026 re-audit (Zhao, Lu et al., arXiv 2605.20798).
AUDIT2026_PUBLIC = (
    "qk_norm",
    "softpick",
    "ssmax",
    "sigmoid_attn",
    "diff_attn",
    "hyper_connections_4",
    "hybrid_norm",
    "attn_res",
    "qk_norm+geglu",
)
# Our completion to twenty: the paper's exact list is not public.
AUDIT2026_COMPLETION = (
    "gated_attn",
    "value_residual",
    "sink_softmax",
    "peri_ln",
    "layerscale",
    "logit_softcap",
    "partial_rope",
    "nope",
    "alibi",
    "z_loss",
    "mtp",
)
OLMPOOL_KNOBS = ("qk_norm", "gqa", "swa", "short_context")


def _factorial(knobs: tuple[str, ...]) -> tuple[str, ...]:
    """All 2^k on/off combinations: the all-off cell (the baseline), then by knobs switched on."""
    cells = sorted(itertools.product((False, True), repeat=len(knobs)), key=sum)
    return tuple(
        "+".join(k for k, on in zip(knobs, cell, strict=True) if on) or BASELINE for cell in cells
    )


SUITES: dict[str, tuple[str, ...]] = {
    # Twenty post-2021 modifications in the spirit of the 2026 re-audit.
    "audit2026": (BASELINE, *AUDIT2026_PUBLIC, *AUDIT2026_COMPLETION),
    # The full 2^4 factorial over the OlmPool knobs, for interaction analysis.
    "olmpool": _factorial(OLMPOOL_KNOBS),
    # The decoder-only core of Narang et al. 2021: GLU variants, non-gated GELU, LayerNorm vs
    # RMSNorm, ReZero, sinusoidal positions, depth at fixed parameters, tied embeddings,
    # talking heads, mixture of softmaxes (the baseline is their SwiGLU/RMSNorm/untied arm).
    "narang2021": (
        BASELINE,
        "geglu",
        "reglu",
        "gelu_mlp",
        "layernorm",
        "rezero",
        "sinusoidal",
        "deep_narrow",
        "tied_embeddings",
        "talking_heads",
        "mos",
    ),
    # Design choices of a hand-written Transformer: Post-LN, sinusoidal positions, RoPE base,
    # head width, residual init scaling, warmup length.
    "foundations": (
        BASELINE,
        "post_ln",
        "sinusoidal",
        "rope_base_500k",
        "head_width_32",
        "head_width_64",
        "no_residual_scaling",
        "long_warmup",
        "no_warmup",
    ),
    # The families today's open models are built from: routed experts (Switch, Mixtral, ST-MoE,
    # DeepSeekMoE, Qwen2-MoE; all at the baseline's active parameters), multi-head latent
    # attention, Llama 4's interleaved NoPE layers, and shared layers (fewer parameters, or the
    # same ones run twice).
    "modern": (
        BASELINE,
        "switch_moe",
        "mixtral_moe",
        "st_moe",
        "deepseek_moe",
        "qwen_moe",
        "mla",
        "irope",
        "albert_sharing",
        "repeat_block",
        "depth_recurrence",
    ),
}


def get_suite(name: str) -> list[str]:
    """The arms of a suite, by their canonical names (as `resolve_arm(...).name` spells them)."""
    if name not in SUITES:
        raise ConfigError(
            f"unknown suite {name!r}{did_you_mean(name, SUITES)}; "
            f"suites: {', '.join(sorted(SUITES))}"
        )
    return [resolve_arm(arm).name for arm in SUITES[name]]


def list_suites() -> list[str]:
    return sorted(SUITES)
