"""The Transformer: a decoder-only language model whose parts are named slots.

Read top to bottom: `Block` is one layer (attention, then MLP, each joined to the residual
stream by a connection rule), `Transformer` embeds tokens, runs the blocks through a residual
stream, normalises and projects to the vocabulary. Every choice a modification can make is a
`name` in one of `ModelConfig`'s slot tables looked up in a registry, so this file never names
a modification.
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

import archaudit.model.latent  # noqa: F401  (registers the "latent" attention)
from archaudit.config import ModelConfig
from archaudit.errors import ConfigError, did_you_mean
from archaudit.model.attention import ATTENTIONS
from archaudit.model.context import ForwardContext
from archaudit.model.heads import HEADS
from archaudit.model.init import init_weights
from archaudit.model.mlp import MLPS
from archaudit.model.moe import ROUTINGS, MoE
from archaudit.model.norms import NORMS, make_norm
from archaudit.model.position import POSITIONS
from archaudit.model.residual import CONNECTIONS, STREAMS, connections_of
from archaudit.model.scores import SCORES
from archaudit.registry import Registry

BLOCKS: Registry[type[Block]] = Registry("block")


@BLOCKS.register("sequential")
class Block(nn.Module):
    """One layer: attention, then the MLP, each joined to the stream by its connection rule."""

    adds_branches: ClassVar[bool] = False
    """True for variants that add the rules' branches themselves and never call `combine`."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        attn_rule = CONNECTIONS.get(cfg.residual.name)
        mlp_rule = CONNECTIONS.get(cfg.residual.mlp or cfg.residual.name)
        self.attn = attn_rule(cfg, ATTENTIONS.get(cfg.attention.name)(cfg, layer))
        self.mlp = mlp_rule(cfg, MLPS.get(cfg.mlp.name)(cfg))

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        """(B, T, d) → (B, T, d). Baseline pre-norm: x + Attn(Norm(x)), then x + MLP(Norm(x))."""
        x = self.attn(x, ctx)
        x = self.mlp(x, ctx)
        return x

    def connections(self) -> tuple[nn.Module, nn.Module]:
        """The two sublayers with their rules, for streams that mix between sublayers."""
        return self.attn, self.mlp


@BLOCKS.register("parallel")
class ParallelBlock(Block):
    """x + Attn(Norm₁(x)) + MLP(Norm₂(x)): both sublayers read the layer's input, so their
    input projections can run as one matmul (GPT-J, Wang & Komatsuzaki 2021; PaLM, Chowdhery
    et al. 2022, arXiv 2204.02311, section 2). Each sublayer keeps its own norm, as GPT-NeoX's
    `use_parallel_residual` (Black et al. 2022, arXiv 2204.06745); GPT-J shares one."""

    adds_branches = True

    def forward(self, x: torch.Tensor, ctx: ForwardContext) -> torch.Tensor:
        return x + self.attn.branch(x, ctx) + self.mlp.branch(x, ctx)


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
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.position = POSITIONS.get(cfg.position.name)(cfg)
        block = BLOCKS.get(cfg.block.name)
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
        stream and block variant (a stream may call a rule's `branch` alone, never a whole
        block), so FSDP2 units and activation checkpointing wrap these."""
        return [connection.sublayer for connection in connections_of(self.blocks)]

    def layers(self) -> list[nn.Module]:
        """The blocks in call order: a shared block appears once per layer that runs it."""
        return [self.blocks[b] for b in self.order]

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """Token ids (B, T) → final hidden states (B, T, d), normalised."""
        return self._trunk(idx)[0]

    def _trunk(self, idx: torch.Tensor) -> tuple[torch.Tensor, ForwardContext]:
        ctx = ForwardContext(T=idx.shape[1], device=idx.device, position=self.position)
        x = self.drop(self.position.embed(self.embed(idx)))
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


SLOTS = {
    "norm.name": NORMS,
    "position.name": POSITIONS,
    "attention.name": ATTENTIONS,
    "attention.score": SCORES,
    "mlp.name": MLPS,
    "moe.routing": ROUTINGS,
    "block.name": BLOCKS,
    "residual.name": CONNECTIONS,
    "residual.mlp": CONNECTIONS,
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
    stream, block = cfg.stream.name, cfg.block.name
    stream_adds = not STREAMS.get(stream).calls_blocks
    if stream_adds and block != "sequential":
        raise ConfigError(
            f"model.stream.name = {stream!r} cannot use model.block.name = {block!r}: the stream "
            "runs each sublayer itself and never calls a block (use model.stream.name = "
            "'standard' or model.block.name = 'sequential')"
        )
    if stream_adds or BLOCKS.get(block).adds_branches:
        owner = (
            f"model.stream.name = {stream!r}" if stream_adds else f"model.block.name = {block!r}"
        )
        for key in ("residual.name", "residual.mlp"):
            rule = _slot_name(cfg, key)
            if rule is not None and not CONNECTIONS.get(rule).adds_plainly:
                raise ConfigError(
                    f"{owner} cannot use model.{key} = {rule!r}: it adds each sublayer's branch "
                    "itself and would never apply the rule's norm (use a rule that adds plainly, "
                    "e.g. 'pre')"
                )
    attention, position = cfg.attention.name, cfg.position.name
    if POSITIONS.get(position).logit_bias and not ATTENTIONS.get(attention).takes_logit_bias:
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
