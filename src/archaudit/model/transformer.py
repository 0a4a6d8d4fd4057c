"""The Transformer: a decoder-only language model whose parts are named slots.

Read top to bottom: `Block` is one layer (attention, then MLP, each reading a normalised copy of
the residual stream and adding its output to it), `Transformer` embeds tokens, runs the blocks
through a residual stream, normalises and projects to the vocabulary. Every choice a
modification can make is a `name` in one of `ModelConfig`'s slot tables looked up in a
registry, so this file never names a modification: the block variants (post-norm, sandwich,
DeepNorm, ReZero, parallel, ...) are in `blocks.py`, each overriding `forward`.
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

import archaudit.model.latent  # noqa: F401  (registers the "latent" attention)
from archaudit.config import ModelConfig
from archaudit.errors import ConfigError, did_you_mean
from archaudit.model.attention import ATTENTIONS
from archaudit.model.context import ForwardContext
from archaudit.model.heads import HEADS
from archaudit.model.init import embedding, init_weights
from archaudit.model.kv_cache import KVCache
from archaudit.model.mlp import MLPS
from archaudit.model.moe import ROUTINGS, MoE
from archaudit.model.norms import NORMS, make_norm
from archaudit.model.position import POSITIONS
from archaudit.model.scores import SCORES
from archaudit.model.streams import STREAMS, Branch
from archaudit.registry import Registry

BLOCKS: Registry[type[Block]] = Registry("block")
"""Block layouts (`model.block.name`) over pre-norm sublayers: sequential, parallel."""
RESIDUALS: Registry[type[Block]] = Registry("residual rule")
"""Sequential blocks by how they join their sublayers to the stream (`model.residual.name`, or
"name+mlp" when `model.residual.mlp` gives the MLP its own rule, as HybridNorm does)."""


def build_attention(cfg: ModelConfig, layer: int) -> nn.Module:
    """The `model.attention` slot's module for layer `layer` (windows and RoPE vary by layer)."""
    return ATTENTIONS.get(cfg.attention.name)(cfg, layer)


def build_mlp(cfg: ModelConfig) -> nn.Module:
    return MLPS.get(cfg.mlp.name)(cfg)


@BLOCKS.register("sequential")
@RESIDUALS.register("pre")
class Block(nn.Module):
    """One layer, pre-norm (Xiong et al. 2020): attention, then the MLP, each reading a
    normalised copy of the stream and adding its output to it. The baseline."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.attn = build_attention(cfg, layer)
        self.attn_norm = make_norm(cfg.norm, cfg.d_model)
        self.mlp = build_mlp(cfg)
        self.mlp_norm = make_norm(cfg.norm, cfg.d_model)

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        """(B, T, d) → (B, T, d)."""
        x = x + self.attn(self.attn_norm(x), ctx)
        x = x + self.mlp(self.mlp_norm(x), ctx)
        return x

    def branches(self) -> tuple[Branch, Branch]:
        """The two terms `forward` adds, Attn(Norm(x)) and MLP(Norm(x)), as functions of the
        stream: what the streams that mix between sublayers run (hyper-connections). They are
        the pre-norm block's only: such streams refuse every other rule (`Stream.check`)."""
        return self._attn_branch, self._mlp_branch

    def _attn_branch(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        return self.attn(self.attn_norm(x), ctx)

    def _mlp_branch(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        return self.mlp(self.mlp_norm(x), ctx)


def residual_rule(cfg: ModelConfig) -> str:
    """The `RESIDUALS` key of a config: `residual.name`, or "name+mlp" when the MLP's rule
    differs."""
    name, mlp = cfg.residual.name, cfg.residual.mlp
    return name if mlp in (None, name) else f"{name}+{mlp}"


def block_class(cfg: ModelConfig) -> type[Block]:
    """The block a config builds: its residual rule's sequential block, or another layout
    (`model.block.name = "parallel"`), which is written for pre-norm sublayers only."""
    rule, layout = residual_rule(cfg), cfg.block.name
    if rule not in RESIDUALS:
        pairs = [name for name in RESIDUALS if "+" in name]
        raise ConfigError(
            f"model.residual.mlp = {cfg.residual.mlp!r} with model.residual.name = "
            f"{cfg.residual.name!r}: no block joins its sublayers so (rule pairs: "
            f"{', '.join(pairs)}); unset model.residual.mlp"
        )
    if layout == "sequential":
        return RESIDUALS.get(rule)
    if rule != "pre":
        key = "name" if cfg.residual.name != "pre" else "mlp"
        raise ConfigError(
            f"model.block.name = {layout!r} cannot use model.residual.{key} = "
            f"{getattr(cfg.residual, key)!r}: its sublayers are pre-norm (use model.residual."
            "name = 'pre', or model.block.name = 'sequential')"
        )
    return BLOCKS.get(layout)


class MTPHead(nn.Module):
    """Predicts token t+1+k from the trunk's last hidden state through its own projection and
    norm, sharing the output head (Gloeckle et al. 2024, arXiv 2404.19737)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.norm = make_norm(cfg.norm, cfg.d_model)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(self.proj(h))


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = embedding(cfg.vocab_size, cfg.d_model)
        self.position = POSITIONS.get(cfg.position.name)(cfg)
        block = block_class(cfg)
        self.order = layer_order(cfg)
        first_use = [self.order.index(b) for b in range(max(self.order) + 1)]
        self.blocks = nn.ModuleList(block(cfg, layer) for layer in first_use)
        self.stream = STREAMS.get(cfg.stream.name)(cfg, 2 * cfg.n_layers)
        self.norm = make_norm(cfg.norm, cfg.d_model)
        self.head = HEADS.get(cfg.head.name)(cfg, self.embed)
        self.mtp = nn.ModuleList(MTPHead(cfg) for _ in range(cfg.objective.mtp_heads))
        self.drop = nn.Dropout(cfg.dropout)
        init_weights(self, cfg)

    def sublayers(self) -> list[nn.Module]:
        """Every block's attention and MLP modules. Each is called as a module under every
        stream and block variant (a stream may run a block's branches, never the whole block),
        so FSDP2 units and activation checkpointing wrap these."""
        return [
            sublayer for block in self.distinct_blocks() for sublayer in (block.attn, block.mlp)
        ]

    def distinct_blocks(self) -> list[Block]:
        """Each block once, in build order."""
        return cast("list[Block]", list(self.blocks))

    def layers(self) -> list[Block]:
        """The blocks in call order: a shared block appears once per layer that runs it."""
        blocks = self.distinct_blocks()
        return [blocks[b] for b in self.order]

    def hidden(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Token ids (B, T) → final hidden states (B, T, d), normalised. With a `cache` (see
        `supports_kv_cache`), `idx` continues the tokens cached so far and joins them."""
        h, _ = self._trunk(idx, cache)
        if cache is not None:
            cache.advance(idx.shape[1])
        return h

    def supports_kv_cache(self) -> bool:
        """Whether decoding with a `KVCache` computes what the full forward computes: every
        attention module keeps its keys through the cache (declares `kv_cache`), and no
        router picks tokens by comparing them across the sequence (expert choice, capacity)."""
        attention = all(getattr(b.attn, "kv_cache", False) for b in self.distinct_blocks())
        return attention and all(m.per_token for m in self.modules() if isinstance(m, MoE))

    def _trunk(
        self, idx: torch.Tensor, cache: KVCache | None = None
    ) -> tuple[torch.Tensor, ForwardContext]:
        ctx = ForwardContext(T=idx.shape[1], device=idx.device, position=self.position, cache=cache)
        x = self.drop(self.position.embed(self.embed(idx), ctx.start))
        x = self.stream(x, self.layers(), ctx)
        return self.norm(x), ctx

    def active_parameters(self) -> int:
        """Parameters one token's forward pass multiplies by: a shared block counted once per
        layer that runs it, an MoE layer's routed experts k of E (what FLOPs per token and
        active-parameter matching use). Equal to `count_parameters` for the baseline."""
        per_block = [count_parameters(b) - _inactive(b) for b in self.blocks]
        unique = sum(count_parameters(b) for b in self.blocks)
        return count_parameters(self) - unique + sum(per_block[b] for b in self.order)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Token ids (B, T) → next-token logits (B, T, V); with targets (B, T), the training
        loss instead (so that DDP and torch.compile wrappers see the whole objective)."""
        if targets is not None:
            return self.loss(idx, targets)
        return self.head(self.hidden(idx))

    def loss(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean next-token cross-entropy plus the objective's auxiliary terms (z-loss, MTP, the
        MoE routers' load-balancing and z-losses)."""
        h, ctx = self._trunk(idx)
        logits = self.head(h).float()  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        objective = self.cfg.objective
        if objective.z_loss:
            # PaLM (Chowdhery et al. 2022): keeps log Z near 0, so logits do not drift.
            loss = loss + objective.z_loss * torch.logsumexp(logits, dim=-1).square().mean()
        for k, mtp in enumerate(self.mtp, start=1):
            # Head k predicts targets shifted by k more: position t → token t + 1 + k.
            aux = self.head(mtp(h[:, :-k])).float()
            aux_loss = F.cross_entropy(aux.flatten(0, 1), targets[:, k:].flatten())
            loss = loss + objective.mtp_weight * aux_loss / len(self.mtp)
        if ctx.aux_losses:
            # Averaged over MoE layer calls, so a coefficient means the same at any depth.
            loss = loss + torch.stack(ctx.aux_losses).mean()
        return loss


def layer_order(cfg: ModelConfig) -> list[int]:
    """Which distinct block each layer runs (`model.sharing`): cycle → l mod U, immediate →
    ⌊l·U/L⌋; without sharing, block l."""
    L = cfg.n_layers
    U = cfg.sharing.blocks or L
    if cfg.sharing.order == "immediate":
        return [layer * U // L for layer in range(L)]
    return [layer % U for layer in range(L)]


def _inactive(module: nn.Module) -> int:
    return sum(m.inactive_parameters() for m in module.modules() if isinstance(m, MoE))


SLOTS: dict[str, Registry[Any]] = {
    "norm.name": NORMS,
    "position.name": POSITIONS,
    "attention.name": ATTENTIONS,
    "attention.score": SCORES,
    "mlp.name": MLPS,
    "moe.routing": ROUTINGS,
    "block.name": BLOCKS,
    "residual.name": RESIDUALS,
    "residual.mlp": RESIDUALS,
    "stream.name": STREAMS,
    "head.name": HEADS,
}
"""Each config key that names a component → the registry it is looked up in."""


def build_model(cfg: ModelConfig) -> Transformer:
    """Check every slot name first, so a typo is reported as the config key it came from, then
    the combinations of slots that would build but silently drop a component."""
    for key, registry in SLOTS.items():
        name = _slot_name(cfg, key)
        if name is not None and name not in registry:
            raise ConfigError(
                f"model.{key} = {name!r} is not a registered {registry.kind}"
                f"{did_you_mean(name, registry)}"
            )
    check_slot_combinations(cfg)
    return Transformer(cfg)


def _slot_name(cfg: ModelConfig, key: str) -> str | None:
    table, _, field = key.partition(".")
    return getattr(getattr(cfg, table), field)


def check_slot_combinations(cfg: ModelConfig) -> None:
    """Refuse slot pairs that would train something other than what the config names."""
    STREAMS.get(cfg.stream.name).check(cfg)
    block_class(cfg)
    attention, position = cfg.attention.name, cfg.position.name
    takes_bias = getattr(ATTENTIONS.get(attention), "takes_logit_bias", False)  # declared by each
    if POSITIONS.get(position).logit_bias and not takes_bias:
        raise ConfigError(
            f"model.attention.name = {attention!r} cannot take the logit bias of "
            f"model.position.name = {position!r} (no per-head bias is defined for it); choose "
            "another position"
        )


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, each shared tensor (tied embeddings) counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def training_flops_per_token(cfg: ModelConfig, n_params: int) -> float:
    """6·N for the matrix multiplies (forward + backward) plus 12·L·T·d_attn for the attention
    scores and weighted sum (PaLM, Chowdhery et al. 2022, appendix B), N the active parameters
    (`Transformer.active_parameters`: k of E experts, a shared block once per use). Embedding
    lookups are free but the LM head is a real matmul, so N includes the output projection."""
    d_attn = cfg.n_heads * cfg.dim_head
    return 6.0 * n_params + 12.0 * cfg.n_layers * cfg.context_length * d_attn
