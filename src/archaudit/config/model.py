"""`ModelConfig`: the model's shape, then one frozen table per slot (OLMo-core's
config-per-component style). Each table validates its own fields where it is built; the shape
checks what spans tables (heads dividing the width). A table's `name` picks a registered
component; names are checked against the registries when the model is built (`model/`), so
that planning and statistics never import torch.

    [model]
    d_model = 256
    [model.attention]
    score = "softpick"          # or: --set model.attention.score=softpick
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from archaudit.config.tables import positive
from archaudit.errors import ConfigError, did_you_mean

Scalar = int | float | str | bool
GATES = ("elementwise", "headwise")
SHARING_ORDERS = ("cycle", "immediate")
MAX_EXPERTS = 4096
"""Routed (or shared) experts per MoE layer: DeepSeek-V3 has 256; more is a typo, not a model."""


@dataclass(frozen=True, kw_only=True)
class NormConfig:
    SECTION: ClassVar[str] = "model.norm"
    name: str = "rmsnorm"
    """Normalisation layer: rmsnorm | layernorm."""
    eps: float = 1e-5

    def __post_init__(self) -> None:
        if not self.eps > 0:
            raise ConfigError(f"{self.SECTION}.eps = {self.eps} must be > 0")


@dataclass(frozen=True, kw_only=True)
class PositionConfig:
    SECTION: ClassVar[str] = "model.position"
    name: str = "rope"
    """Positional scheme: rope | alibi | nope | sinusoidal | learned."""
    rope_base: float = 10000.0
    rope_fraction: float = 1.0
    """Fraction of each head's dimensions that RoPE rotates (partial RoPE < 1)."""
    nope_every: int | None = None
    """Every `nope_every`-th layer ((l + 1) mod n = 0) attends without RoPE (Llama 4's
    interleaved NoPE layers); None = RoPE in every layer."""

    def __post_init__(self) -> None:
        if self.nope_every is not None:
            positive(self, "nope_every")
        if not 0.0 <= self.rope_fraction <= 1.0:
            raise ConfigError(
                f"{self.SECTION}.rope_fraction = {self.rope_fraction} must be in [0, 1]"
            )
        if not self.rope_base > 1.0:
            raise ConfigError(f"{self.SECTION}.rope_base = {self.rope_base} must be > 1")


@dataclass(frozen=True, kw_only=True)
class AttentionConfig:
    SECTION: ClassVar[str] = "model.attention"
    name: str = "standard"
    """Attention module: standard | differential."""
    score: str = "softmax"
    """Score function: softmax | softpick | ssmax | sigmoid | sink_softmax | ..."""
    qk_norm: bool = False
    qkv_norm: bool = False
    """RMSNorm on queries, keys and values (HybridNorm)."""
    logit_softcap: float | None = None
    gate: str | None = None
    """Output gate before W_O: None | elementwise | headwise."""
    value_residual: bool = False
    window: int | None = None
    """Sliding-window size for windowed layers; None = full attention everywhere."""
    global_every: int = 4
    """With `window`: every `global_every`-th layer keeps full attention (3 of 4 windowed)."""
    ssmax_init: float = 0.43
    """Initial scale s of `score = "ssmax"` (Nakanishi 2025)."""
    latent_rank: int | None = None
    """`name = "latent"` (MLA): width of the joint K/V latent. None = 4·d_h (DeepSeek-V2-Lite)."""
    latent_q_rank: int | None = None
    """MLA: width of the query latent; None = queries projected directly (DeepSeek-V2-Lite)."""
    latent_rope_dim: int | None = None
    """MLA: width of the decoupled RoPE part of queries and the shared RoPE key. None = d_h/2."""

    def __post_init__(self) -> None:
        positive(self, "global_every")
        for key in ("latent_rank", "latent_q_rank"):
            if getattr(self, key) is not None:
                positive(self, key)
        if self.latent_rope_dim is not None and (
            self.latent_rope_dim < 2 or self.latent_rope_dim % 2
        ):
            raise ConfigError(
                f"{self.SECTION}.latent_rope_dim = {self.latent_rope_dim} must be even and >= 2"
            )
        if self.window is not None and self.window < 1:
            raise ConfigError(f"{self.SECTION}.window = {self.window} must be >= 1 (or unset)")
        if self.gate not in (None, *GATES):
            raise ConfigError(f"{self.SECTION}.gate = {self.gate!r}; allowed: {GATES}")
        if self.logit_softcap is not None and not self.logit_softcap > 0:
            raise ConfigError(f"{self.SECTION}.logit_softcap = {self.logit_softcap} must be > 0")


@dataclass(frozen=True, kw_only=True)
class MLPConfig:
    SECTION: ClassVar[str] = "model.mlp"
    name: str = "swiglu"
    """MLP: swiglu | geglu | reglu | relu2 | gelu | moe (its options: `model.moe`)."""
    hidden: int | None = None
    """Hidden width. None = 8/3·d rounded up to 16 for gated MLPs, 4·d otherwise."""

    def __post_init__(self) -> None:
        if self.hidden is not None:
            positive(self, "hidden")


@dataclass(frozen=True, kw_only=True)
class MoEConfig:
    """The mixture of experts of `model.mlp.name = "moe"`: E SwiGLU experts, a linear router."""

    SECTION: ClassVar[str] = "model.moe"
    experts: int = 8
    """Routed experts per MoE layer."""
    top_k: int = 2
    """Experts each token is sent to (Switch: 1, Mixtral: 2); with expert choice, the average."""
    shared_experts: int = 0
    """Experts every token passes through (DeepSeekMoE), run as one MLP of their total width."""
    shared_gate: bool = False
    """Scale the shared experts by σ(x·w) (Qwen2-MoE's shared-expert gate)."""
    expert_hidden: int | None = None
    """Hidden width of one expert. None = ⌈H/(top_k + shared_experts)⌉, H the dense MLP's width,
    so a token's active MLP parameters match the dense MLP's (fine-grained experts)."""
    routing: str = "top_k"
    """top_k (tokens choose experts) | expert_choice (experts choose tokens, Zhou et al. 2022)."""
    normalize_top_k: bool = True
    """Renormalise the k chosen gate probabilities to sum to 1 (Mixtral); Switch/DeepSeek: no."""
    capacity_factor: float | None = None
    """Expert capacity = ⌈factor·N·k/E⌉ assignments per batch of N tokens; the rest are dropped
    (the token keeps its residual). None = dropless (every assignment is computed)."""
    balance_loss: float = 0.01
    """Coefficient of the load-balancing loss E·Σ_e f_e·P_e (Switch/GShard; Fedus et al. 2021)."""
    router_z_loss: float = 0.0
    """Coefficient of the router z-loss mean (log Σ_e e^{z_e})² (ST-MoE uses 1e-3)."""

    def __post_init__(self) -> None:
        positive(self, "experts", "top_k")
        if self.experts > MAX_EXPERTS or self.shared_experts > MAX_EXPERTS:
            raise ConfigError(
                f"{self.SECTION}.experts = {self.experts}, shared_experts = "
                f"{self.shared_experts}: at most {MAX_EXPERTS} each"
            )
        if self.top_k > self.experts:
            raise ConfigError(
                f"{self.SECTION}.top_k = {self.top_k} exceeds {self.SECTION}.experts = "
                f"{self.experts}"
            )
        if not (self.shared_experts >= 0 and self.balance_loss >= 0 and self.router_z_loss >= 0):
            raise ConfigError(
                f"{self.SECTION}: shared_experts, balance_loss and router_z_loss must be >= 0"
            )
        if self.expert_hidden is not None:
            positive(self, "expert_hidden")
        # a factor of E or more drops nothing: past MAX_EXPERTS it only overflows the capacity
        if self.capacity_factor is not None and not 0 < self.capacity_factor <= MAX_EXPERTS:
            raise ConfigError(
                f"{self.SECTION}.capacity_factor = {self.capacity_factor} must be > 0 and at "
                f"most {MAX_EXPERTS} (or unset: dropless)"
            )


@dataclass(frozen=True, kw_only=True)
class SharingConfig:
    """Cross-layer parameter sharing: `n_layers` layers run over `blocks` distinct blocks."""

    SECTION: ClassVar[str] = "model.sharing"
    blocks: int | None = None
    """Distinct blocks U ≤ model.n_layers; None = one per layer (no sharing)."""
    order: str = "cycle"
    """cycle: layer l runs block l mod U (ALBERT with U = 1, universal transformers);
    immediate: layer l runs block ⌊l·U/L⌋, each about L/U times in a row (MobileLLM)."""

    def __post_init__(self) -> None:
        if self.blocks is not None:
            positive(self, "blocks")
        if self.order not in SHARING_ORDERS:
            raise ConfigError(
                f"{self.SECTION}.order = {self.order!r}; allowed: {SHARING_ORDERS}"
                f"{did_you_mean(self.order, SHARING_ORDERS)}"
            )


@dataclass(frozen=True, kw_only=True)
class BlockConfig:
    SECTION: ClassVar[str] = "model.block"
    name: str = "sequential"
    """How a layer runs its two sublayers: sequential (attention, then MLP) | parallel."""


@dataclass(frozen=True, kw_only=True)
class ResidualConfig:
    SECTION: ClassVar[str] = "model.residual"
    name: str = "pre"
    """How a sublayer joins the residual stream: pre | post | sandwich | deepnorm | ..."""
    mlp: str | None = None
    """The MLP sublayer's rule when it differs from `name` (HybridNorm: post-norm there)."""
    layerscale_init: float = 0.1
    """γ at init for `name = "layerscale"`."""

    def __post_init__(self) -> None:
        if not abs(self.layerscale_init) < math.inf:
            raise ConfigError(
                f"{self.SECTION}.layerscale_init = {self.layerscale_init} must be a finite number"
            )


@dataclass(frozen=True, kw_only=True)
class StreamConfig:
    SECTION: ClassVar[str] = "model.stream"
    name: str = "standard"
    """The residual stream itself: standard | hyper | attn_res."""
    n_streams: int = 4
    """Parallel residual streams of `name = "hyper"`."""

    def __post_init__(self) -> None:
        positive(self, "n_streams")


@dataclass(frozen=True, kw_only=True)
class HeadConfig:
    SECTION: ClassVar[str] = "model.head"
    name: str = "linear"
    """Output head: linear | mos (mixture of softmaxes)."""
    tie_embeddings: bool = False
    mos_experts: int = 4

    def __post_init__(self) -> None:
        positive(self, "mos_experts")


@dataclass(frozen=True, kw_only=True)
class ObjectiveConfig:
    SECTION: ClassVar[str] = "model.objective"
    z_loss: float = 0.0
    """Coefficient of the (log Σ e^z)² auxiliary loss (PaLM uses 1e-4)."""
    mtp_heads: int = 0
    """Extra heads predicting tokens t+2, t+3, ... (multi-token prediction)."""
    mtp_weight: float = 0.3

    def __post_init__(self) -> None:
        if not (self.z_loss >= 0 and self.mtp_heads >= 0 and self.mtp_weight >= 0):
            raise ConfigError(f"{self.SECTION}: z_loss, mtp_heads and mtp_weight must be >= 0")


@dataclass(frozen=True, kw_only=True)
class InitConfig:
    SECTION: ClassVar[str] = "model.init"
    std: float = 0.02
    scale_residual: bool = True
    """Residual output projections start at std/√(2L) (GPT-2)."""

    def __post_init__(self) -> None:
        if not self.std > 0:
            raise ConfigError(f"{self.SECTION}.std = {self.std} must be > 0")


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """A decoder-only Transformer. Defaults are the baseline of docs/modifications.md."""

    SECTION: ClassVar[str] = "model"
    MOVED: ClassVar[Mapping[str, str]] = {
        "norm_eps": "norm.eps",
        "mlp_residual": "residual.mlp",
        "layerscale_init": "residual.layerscale_init",
        "hyper_streams": "stream.n_streams",
        "score": "attention.score",
        "qk_norm": "attention.qk_norm",
        "qkv_norm": "attention.qkv_norm",
        "logit_softcap": "attention.logit_softcap",
        "attn_gate": "attention.gate",
        "value_residual": "attention.value_residual",
        "window": "attention.window",
        "global_every": "attention.global_every",
        "rope_base": "position.rope_base",
        "rope_fraction": "position.rope_fraction",
        "mlp_hidden": "mlp.hidden",
        "tie_embeddings": "head.tie_embeddings",
        "mos_experts": "head.mos_experts",
        "z_loss": "objective.z_loss",
        "mtp_heads": "objective.mtp_heads",
        "mtp_weight": "objective.mtp_weight",
        "init_std": "init.std",
        "scale_residual_init": "init.scale_residual",
    }
    """Flat keys of the layout before the per-slot tables → their place now, so that the error
    for an old key names the new one (`unknown key model.score (it moved: ...)`)."""
    KNOWN_AS: ClassVar[Mapping[str, str]] = {
        "hidden_size": "d_model",
        "dim": "d_model",
        "n_embd": "d_model",
        "num_layers": "n_layers",
        "num_hidden_layers": "n_layers",
        "n_layer": "n_layers",
        "num_heads": "n_heads",
        "num_attention_heads": "n_heads",
        "n_head": "n_heads",
        "max_seq_len": "context_length",
        "max_position_embeddings": "context_length",
        "block_size": "context_length",
        "seq_len": "context_length",
    }
    """Other trainers' names (Hugging Face, nanoGPT, torchtitan) → this config's, for the
    did-you-mean of an unknown key."""

    # --- shape --------------------------------------------------------------------------------
    vocab_size: int = 256
    """Tokenizer vocabulary size (256 for the default byte-level tokenizer)."""
    context_length: int = 256
    """Training sequence length in tokens."""
    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int | None = None
    """Key/value heads; fewer than `n_heads` is grouped-query attention. None = `n_heads`."""
    head_dim: int | None = None
    """Width of one head. None = d_model // n_heads."""
    dropout: float = 0.0

    # --- slots: one table each ----------------------------------------------------------------
    norm: NormConfig = field(default_factory=NormConfig)
    position: PositionConfig = field(default_factory=PositionConfig)
    attention: AttentionConfig = field(default_factory=AttentionConfig)
    mlp: MLPConfig = field(default_factory=MLPConfig)
    moe: MoEConfig = field(default_factory=MoEConfig)
    sharing: SharingConfig = field(default_factory=SharingConfig)
    block: BlockConfig = field(default_factory=BlockConfig)
    residual: ResidualConfig = field(default_factory=ResidualConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    head: HeadConfig = field(default_factory=HeadConfig)
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    init: InitConfig = field(default_factory=InitConfig)
    extra: Mapping[str, Scalar] = field(default_factory=dict)
    """Free parameters for user-registered components (plugins)."""

    def __post_init__(self) -> None:
        positive(self, "vocab_size", "context_length", "d_model", "n_layers", "n_heads")
        if self.n_kv_heads is not None and (self.n_kv_heads < 1 or self.n_heads % self.n_kv_heads):
            raise ConfigError(
                f"model.n_kv_heads = {self.n_kv_heads} must divide model.n_heads = {self.n_heads}"
            )
        if self.head_dim is None and self.d_model % self.n_heads:
            raise ConfigError(
                f"model.d_model = {self.d_model} is not divisible by model.n_heads = "
                f"{self.n_heads}; choose another n_heads or set model.head_dim"
            )
        if self.head_dim is not None:
            positive(self, "head_dim")
        self._check_latent()
        blocks = self.sharing.blocks
        if blocks is not None and blocks > self.n_layers:
            raise ConfigError(
                f"model.sharing.blocks = {blocks} exceeds model.n_layers = {self.n_layers}"
            )
        if self.objective.mtp_heads >= self.context_length:
            raise ConfigError(
                f"model.objective.mtp_heads = {self.objective.mtp_heads} must be below "
                f"model.context_length = {self.context_length}: head k predicts the token k + 1 "
                "places ahead, inside the context"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"model.dropout = {self.dropout} must be in [0, 1)")

    def _check_latent(self) -> None:
        """MLA's widths stay within what they compress: the KV latent within the keys and
        values of all heads, the query latent within d_model, the RoPE part within a head."""
        attention, width = self.attention, self.n_heads * self.dim_head
        limits = {
            "latent_rank": 2 * width,
            "latent_q_rank": self.d_model,
            "latent_rope_dim": self.dim_head,
        }
        for key, limit in limits.items():
            value = getattr(attention, key)
            if value is not None and value > limit:
                raise ConfigError(
                    f"model.attention.{key} = {value} exceeds {limit}, the width it compresses "
                    f"(model.d_model = {self.d_model}, {self.n_heads} heads of {self.dim_head})"
                )

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.d_model // self.n_heads
