"""Stock transformers classes that compute exactly what some archaudit configurations compute.

Each `StockClass` lists the slot values it accepts (a slot it does not list must keep the
baseline's value), the config fields it needs beyond the common ones, and where each of our
weights goes. `pick` takes the first class that accepts every slot, or refuses in one line that
names the slot no stock class (or no single one) expresses. Read against transformers 5.x:
`LlamaConfig`, `Qwen3Config` (per-head RMSNorm on q and k before RoPE), `SmolLM3Config`
(`no_rope_layers`, `layer_types`), `ArceeConfig` (a non-gated MLP), `StableLmConfig`
(LayerNorm with bias, `partial_rotary_factor`), `Phi3Config` (fused projections, partial RoPE),
`MixtralConfig` (SwiGLU experts, softmax top-k routing renormalised, dropless),
`Qwen2MoeConfig` (the same experts, top-k renormalised or not, a shared expert with a sigmoid
gate).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from archaudit.config import ModelConfig
from archaudit.errors import ConfigError

SLOTS = (
    "norm.name",
    "position.name",
    "position.rope_fraction",
    "position.nope_every",
    "attention.name",
    "attention.score",
    "attention.qk_norm",
    "attention.qkv_norm",
    "attention.logit_softcap",
    "attention.gate",
    "attention.value_residual",
    "attention.window",
    "mlp.name",
    "block.name",
    "residual.name",
    "residual.mlp",
    "stream.name",
    "head.name",
    "sharing.blocks",
    "moe.shared_experts",
    "moe.shared_gate",
    "moe.routing",
    "moe.normalize_top_k",
    "moe.capacity_factor",
)
"""The config keys that change what a trained model computes at inference. Shape, RoPE base,
tied embeddings, init and the auxiliary objective (z-loss; MTP heads are dropped, they never
feed the next-token logits) export to every class. The MoE options listed keep their defaults,
Mixtral's routing (only a dense MLP or Mixtral's MoE reads them)."""

GATED_ACT = {"swiglu": "silu", "geglu": "gelu", "reglu": "relu"}
PLAIN_ACT = {"gelu": "gelu", "relu2": "relu2"}
WINDOW = (None, int)  # None or any window size
FRACTION = (float,)  # any RoPE fraction


def slot_value(cfg: ModelConfig, key: str) -> Any:
    table, _, name = key.partition(".")
    return getattr(getattr(cfg, table), name)


def _accepted(value: Any, allowed: tuple) -> bool:
    return any(
        isinstance(value, a) and not isinstance(value, bool) if isinstance(a, type) else value == a
        for a in allowed
    )


@dataclass(frozen=True)
class StockClass:
    model_type: str
    architecture: str
    accepts: Mapping[str, tuple]
    """Slot key → allowed values (a type allows any value of it); unlisted keys: baseline."""
    fields: Callable[[ModelConfig], dict[str, Any]]
    renames: tuple[tuple[str, str], ...]
    """(our weight name pattern, theirs), regular expressions applied in order."""
    fuse: Callable[[ModelConfig, dict[str, torch.Tensor]], dict[str, torch.Tensor]] = field(
        default=lambda cfg, state: state
    )

    def blocker(self, cfg: ModelConfig) -> str | None:
        """The first slot key whose value this class cannot express, or None."""
        base = ModelConfig()
        for key in SLOTS:
            allowed = self.accepts.get(key, (slot_value(base, key),))
            if not _accepted(slot_value(cfg, key), allowed):
                return key
        return None

    def weights(self, cfg: ModelConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Our state dict under this class's names (tied heads and MTP heads left out)."""
        out = {}
        for name, tensor in unshared(cfg, state).items():
            if name.startswith("mtp.") or (cfg.head.tie_embeddings and name == "head.proj.weight"):
                continue
            for pattern, replacement in self.renames:
                name = re.sub(pattern, replacement, name)
            out[name] = tensor
        return self.fuse(cfg, out)


def unshared(cfg: ModelConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`state` with one block per layer: a block that several layers run (`model.sharing`:
    ALBERT's one block, repeat_block, depth recurrence) copied to each of them, in the order
    the model runs them (`layer_order`). A stock class has no shared layers; copies of one block
    compute what it computes, only the file is larger."""
    if not cfg.sharing.blocks:
        return state
    from archaudit.model.transformer import layer_order

    out = {name: t for name, t in state.items() if not name.startswith("blocks.")}
    for layer, block in enumerate(layer_order(cfg)):
        prefix = f"blocks.{block}."
        out |= {
            f"blocks.{layer}.{name.removeprefix(prefix)}": t.clone()  # safetensors: no aliases
            for name, t in state.items()
            if name.startswith(prefix)
        }
    return out


STOCK: list[StockClass] = []
"""Tried in order: the first that accepts a configuration exports it."""


def pick(cfg: ModelConfig) -> StockClass:
    """The stock class that computes `cfg` exactly, or a one-line refusal naming the slot."""
    blockers: list[tuple[StockClass, str]] = []
    for stock in STOCK:
        blocker = stock.blocker(cfg)
        if blocker is None:
            return stock
        blockers.append((stock, blocker))
    for key in SLOTS:
        value = slot_value(cfg, key)
        if not any(
            _accepted(value, s.accepts.get(key, (slot_value(ModelConfig(), key),))) for s in STOCK
        ):
            raise ConfigError(
                f"model.{key} = {value!r}: no stock transformers class computes it, so this run "
                "cannot be exported to a Hugging Face directory without custom code"
            )
    _, first = blockers[0]
    raise ConfigError(
        f"model.{first} = {slot_value(cfg, first)!r}: no single stock transformers class combines "
        f"it with this run's other slots ({', '.join(s.model_type for s, _ in blockers)} each "
        "lack one)"
    )


def stock_class(stock: StockClass) -> StockClass:
    STOCK.append(stock)
    return stock


def _rope(cfg: ModelConfig) -> dict[str, Any]:
    return {"rope_parameters": {"rope_type": "default", "rope_theta": cfg.position.rope_base}}


def _shape(cfg: ModelConfig, gated: bool = True) -> dict[str, Any]:
    from archaudit.model.mlp import hidden_width

    act = GATED_ACT if gated else PLAIN_ACT
    return {
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.d_model,
        "intermediate_size": hidden_width(cfg, gated=gated),
        "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.n_heads,
        "num_key_value_heads": cfg.kv_heads,
        "head_dim": cfg.dim_head,
        "hidden_act": act.get(cfg.mlp.name, "silu"),  # moe: SwiGLU experts
        "max_position_embeddings": cfg.context_length,
        "tie_word_embeddings": cfg.head.tie_embeddings,
        **_rope(cfg),
    }


def _rms(cfg: ModelConfig, gated: bool = True) -> dict[str, Any]:
    return {**_shape(cfg, gated), "rms_norm_eps": cfg.norm.eps}


def _rope_layers(cfg: ModelConfig) -> list[int]:
    """SmolLM3's `no_rope_layers`: 1 where a layer rotates (NoPE everywhere, or every
    `nope_every`-th layer without RoPE as Llama 4's iRoPE)."""
    from archaudit.model.position import rotates

    return [int(cfg.position.name == "rope" and rotates(cfg, n)) for n in range(cfg.n_layers)]


def _windows(cfg: ModelConfig) -> dict[str, Any]:
    """Sliding windows per layer as `layer_types` (HF masks key j from query i when
    i − j ≥ window, as `ForwardContext.mask` does)."""
    from archaudit.model.attention import layer_window

    if cfg.attention.window is None:
        return {}
    kinds = [
        "full_attention" if layer_window(cfg, n) is None else "sliding_attention"
        for n in range(cfg.n_layers)
    ]
    return {
        "use_sliding_window": True,
        "sliding_window": cfg.attention.window,
        "layer_types": kinds,
    }


LAYER = r"^blocks\.(\d+)\."
LLAMA_NAMES = (
    (r"^embed\.", "model.embed_tokens."),
    (LAYER + r"attn_norm\.", r"model.layers.\1.input_layernorm."),
    (LAYER + r"attn\.", r"model.layers.\1.self_attn."),
    (LAYER + r"mlp_norm\.", r"model.layers.\1.post_attention_layernorm."),
    (LAYER + r"mlp\.w1\.", r"model.layers.\1.mlp.gate_proj."),
    (LAYER + r"mlp\.w3\.", r"model.layers.\1.mlp.up_proj."),
    (LAYER + r"mlp\.w2\.", r"model.layers.\1.mlp.down_proj."),
    (r"^norm\.", "model.norm."),
    (r"^head\.proj\.", "lm_head."),
)
"""Our names → Llama's; Qwen3, SmolLM3 and StableLM name their weights the same way."""
PLAIN_MLP_NAMES = tuple(
    (ours, theirs.replace("gate_proj", "up_proj")) if "w1" in ours else (ours, theirs)
    for ours, theirs in LLAMA_NAMES
)
"""A non-gated MLP: W1 is the up projection (Arcee's `up_proj`, `down_proj`)."""

LLAMA = stock_class(
    StockClass(
        "llama",
        "LlamaForCausalLM",
        # every layer of a Llama is alike, so shared blocks copied into it compute the same
        {"mlp.name": tuple(GATED_ACT), "sharing.blocks": WINDOW},
        lambda cfg: _rms(cfg),
        LLAMA_NAMES,
    )
)
QWEN3 = stock_class(
    StockClass(
        "qwen3",
        "Qwen3ForCausalLM",
        {"attention.qk_norm": (True,), "attention.window": WINDOW, "mlp.name": tuple(GATED_ACT)},
        lambda cfg: {**_rms(cfg), **_windows(cfg)},
        LLAMA_NAMES,
    )
)
SMOLLM3 = stock_class(
    StockClass(
        "smollm3",
        "SmolLM3ForCausalLM",
        {
            "position.name": ("rope", "nope"),
            "position.nope_every": WINDOW,  # None or any interval
            "attention.window": WINDOW,
            "mlp.name": tuple(GATED_ACT),
        },
        lambda cfg: {**_rms(cfg), **_windows(cfg), "no_rope_layers": _rope_layers(cfg)},
        LLAMA_NAMES,
    )
)
ARCEE = stock_class(
    StockClass(
        "arcee",
        "ArceeForCausalLM",
        {"mlp.name": tuple(PLAIN_ACT)},
        lambda cfg: _rms(cfg, gated=False),
        PLAIN_MLP_NAMES,
    )
)
STABLELM = stock_class(
    StockClass(
        "stablelm",
        "StableLmForCausalLM",
        {
            "norm.name": ("layernorm",),
            "position.rope_fraction": FRACTION,
            "mlp.name": tuple(GATED_ACT),
        },
        lambda cfg: {**_shape(cfg), **_partial(cfg), "layer_norm_eps": cfg.norm.eps},
        LLAMA_NAMES,
    )
)


def _partial(cfg: ModelConfig) -> dict[str, Any]:
    """RoPE on the first `rot` dims of each head: HF rotates int(head_dim · factor) dims."""
    rot = int(cfg.dim_head * cfg.position.rope_fraction) // 2 * 2
    factor = rot / cfg.dim_head
    if int(cfg.dim_head * factor) != rot:
        raise ConfigError(
            f"model.position.rope_fraction = {cfg.position.rope_fraction}: the "
            f"{rot} rotated dims are not a fraction transformers reproduces"
        )
    rope = _rope(cfg)["rope_parameters"]
    return {"rope_parameters": {**rope, "partial_rotary_factor": factor}}


def _fuse_phi3(cfg: ModelConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Phi-3 runs q, k, v as one `qkv_proj` and gate, up as one `gate_up_proj` (gate first)."""
    out = dict(state)
    for n in range(cfg.n_layers):
        at, mlp = f"model.layers.{n}.self_attn.", f"model.layers.{n}.mlp."
        parts = [out.pop(f"{at}{p}_proj.weight") for p in "qkv"]
        out[f"{at}qkv_proj.weight"] = torch.cat(parts)
        gate, up = out.pop(f"{mlp}gate_proj.weight"), out.pop(f"{mlp}up_proj.weight")
        out[f"{mlp}gate_up_proj.weight"] = torch.cat([gate, up])
    return out


PHI3 = stock_class(
    StockClass(
        "phi3",
        "Phi3ForCausalLM",
        {"position.rope_fraction": FRACTION, "mlp.name": tuple(GATED_ACT)},
        lambda cfg: {
            **_rms(cfg),
            **_partial(cfg),
            "original_max_position_embeddings": cfg.context_length,
        },
        LLAMA_NAMES,
        _fuse_phi3,
    )
)


EXPERT_ALIGN = 8
"""Exported experts are this many hidden units wide, or a multiple: transformers' CPU MoE path
(`torch._grouped_mm`) needs every stride a multiple of 16 bytes (8 units in half precision, 4
in float32) and died at a width of 59 (issue 57)."""


def exported_expert_width(cfg: ModelConfig) -> int:
    """The run's expert width rounded up to `EXPERT_ALIGN`: the units added have zero weights
    in and out, so each expert computes what ours does (silu(0) · 0 = 0, and 0 adds nothing)."""
    from archaudit.model.moe import expert_width

    return -(-expert_width(cfg) // EXPERT_ALIGN) * EXPERT_ALIGN


def _mixtral(cfg: ModelConfig) -> dict[str, Any]:
    """Mixtral: SwiGLU experts of `exported_expert_width`, softmax router, top-k renormalised,
    dropless."""
    dense = {**_rms(cfg), "hidden_act": "silu", "intermediate_size": exported_expert_width(cfg)}
    return {
        **dense,
        "num_local_experts": cfg.moe.experts,
        "num_experts_per_tok": cfg.moe.top_k,
        "router_jitter_noise": 0.0,
        "output_router_logits": False,
        "sliding_window": None,
    }


def _fuse_mixtral(cfg: ModelConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Mixtral's experts are two stacked tensors per layer: `gate_up_proj` (E, 2H, d), gate
    first, and `down_proj` (E, d, H), H padded with zero units to `exported_expert_width`."""
    from archaudit.model.moe import expert_width

    out = dict(state)
    extra = exported_expert_width(cfg) - expert_width(cfg)
    for n in range(cfg.n_layers):
        at = f"model.layers.{n}.mlp.experts."
        experts = range(cfg.moe.experts)
        gate_up = [torch.cat([_pad_rows(out.pop(f"{at}{e}.{w}.weight"), extra)
                              for w in ("w1", "w3")]) for e in experts]  # fmt: skip
        out[f"{at}gate_up_proj"] = torch.stack(gate_up)
        down = [_pad_rows(out.pop(f"{at}{e}.w2.weight").T, extra).T for e in experts]
        out[f"{at}down_proj"] = torch.stack(down).contiguous()
    return out


def _pad_rows(weight: torch.Tensor, extra: int) -> torch.Tensor:
    """`weight` (H, d) with `extra` rows of zeros below."""
    return torch.cat([weight, weight.new_zeros(extra, weight.shape[1])])


MIXTRAL_NAMES = (
    (LAYER + r"mlp\.router\.", r"model.layers.\1.mlp.gate."),
    (LAYER + r"mlp\.experts\.", r"model.layers.\1.mlp.experts."),
    *LLAMA_NAMES,
)
MIXTRAL = stock_class(
    StockClass(
        "mixtral",
        "MixtralForCausalLM",
        {"mlp.name": ("moe",)},
        _mixtral,
        MIXTRAL_NAMES,
        _fuse_mixtral,
    )
)


def _qwen2_moe(cfg: ModelConfig) -> dict[str, Any]:
    """Qwen2-MoE: Mixtral's experts and router, `norm_topk_prob` as ours, a shared expert of
    the shared experts' total width behind a sigmoid gate, no q/k/v biases, every layer MoE."""
    from archaudit.model.moe import expert_width

    width = expert_width(cfg)
    return {
        **_rms(cfg),
        "hidden_act": "silu",
        "num_experts": cfg.moe.experts,
        "num_experts_per_tok": cfg.moe.top_k,
        "moe_intermediate_size": exported_expert_width(cfg),
        "shared_expert_intermediate_size": max(cfg.moe.shared_experts, 1) * width,
        "norm_topk_prob": cfg.moe.normalize_top_k,
        "qkv_bias": False,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "output_router_logits": False,
        "use_sliding_window": False,
    }


def _fuse_qwen2_moe(cfg: ModelConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Mixtral's stacked experts, and a shared expert that always has a gate: where ours has
    none, the gate's weights are 0 (σ(0) = 1/2) and the shared down projection doubled, which
    is exact (a power of two); where ours has no shared expert, its weights are 0."""
    out = _fuse_mixtral(cfg, state)
    d = cfg.d_model
    for n in range(cfg.n_layers):
        at = f"model.layers.{n}.mlp."
        if not cfg.moe.shared_experts:
            out |= {f"{at}shared_expert.{w}.weight": torch.zeros(shape)
                    for w, shape in (("gate_proj", (1, d)), ("up_proj", (1, d)),
                                     ("down_proj", (d, 1)))}  # fmt: skip
        if not cfg.moe.shared_gate:
            out[f"{at}shared_expert_gate.weight"] = torch.zeros(1, d)
            down = f"{at}shared_expert.down_proj.weight"
            out[down] = out[down] * 2
    return out


QWEN2_MOE_NAMES = (
    (LAYER + r"mlp\.shared_gate\.", r"model.layers.\1.mlp.shared_expert_gate."),
    (LAYER + r"mlp\.shared\.w1\.", r"model.layers.\1.mlp.shared_expert.gate_proj."),
    (LAYER + r"mlp\.shared\.w3\.", r"model.layers.\1.mlp.shared_expert.up_proj."),
    (LAYER + r"mlp\.shared\.w2\.", r"model.layers.\1.mlp.shared_expert.down_proj."),
    *MIXTRAL_NAMES,
)
QWEN2_MOE = stock_class(
    StockClass(
        "qwen2_moe",
        "Qwen2MoeForCausalLM",
        {
            "mlp.name": ("moe",),
            "moe.shared_experts": (int,),
            "moe.shared_gate": (True, False),
            "moe.normalize_top_k": (True, False),
        },
        _qwen2_moe,
        QWEN2_MOE_NAMES,
        _fuse_qwen2_moe,
    )
)
