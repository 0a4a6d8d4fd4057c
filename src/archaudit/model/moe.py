"""Mixture of experts for the `mlp` slot (`model.mlp.name = "moe"`, options in `model.moe`).

A linear router scores the E experts for every token; a routing rule (its own registry) turns
the probabilities into assignments (token, expert, weight), capacity dropping included; each
expert, a SwiGLU MLP, runs on the tokens assigned to it and the weighted outputs are summed.
Shared experts (DeepSeekMoE) see every token. The auxiliary losses — load balancing
(Switch/GShard) and the router z-loss (ST-MoE) — go into `ctx.aux_losses`, which the model adds
to its training loss; the routing statistics of the last training forward stay on the module
for the trainer's metrics (`moe_stats`, `routing_metrics`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from archaudit.config import ModelConfig, MoEConfig
from archaudit.model.context import ForwardContext
from archaudit.model.init import Init
from archaudit.model.mlp import MLPS, hidden_width
from archaudit.registry import Registry


@dataclass(frozen=True)
class Dispatch:
    """The kept assignments of one batch, each a (token, expert, weight) triple."""

    token: torch.Tensor  # (A,) long
    expert: torch.Tensor  # (A,) long
    weight: torch.Tensor  # (A,) gate value multiplying the expert's output
    chosen: torch.Tensor  # (E,) assignments each expert was chosen for, before dropping
    dropped: torch.Tensor  # () fraction of the chosen assignments dropped for capacity


Routing = Callable[[torch.Tensor, MoEConfig], Dispatch]
ROUTINGS: Registry[Routing] = Registry("routing")


def capacity(n_assignments: int, n_experts: int, factor: float) -> int:
    """⌈factor·A/E⌉ assignments per expert (Switch Transformer, Fedus et al. 2021, eq. 3)."""
    return math.ceil(factor * n_assignments / n_experts)


@ROUTINGS.register("top_k")
def top_k_routing(probs: torch.Tensor, options: MoEConfig) -> Dispatch:
    """Each token picks its k most probable experts (Shazeer et al. 2017). Over capacity, first
    choices win over second choices, and earlier tokens over later ones (GShard's priority)."""
    n_tokens, n_experts = probs.shape
    weight, expert = probs.topk(options.top_k, dim=-1)  # (N, k)
    if options.normalize_top_k:
        weight = weight / weight.sum(dim=-1, keepdim=True)
    # Choice-major order (every token's first choice, then every second choice, ...).
    expert, weight = expert.T.flatten(), weight.T.flatten()
    token = torch.arange(n_tokens, device=probs.device).repeat(options.top_k)
    chosen = torch.bincount(expert, minlength=n_experts)
    keep = torch.ones_like(expert, dtype=torch.bool)
    if options.capacity_factor is not None:
        one_hot = F.one_hot(expert, n_experts)
        rank = (one_hot.cumsum(dim=0) * one_hot).sum(dim=-1) - 1  # place in its expert's queue
        keep = rank < capacity(expert.numel(), n_experts, options.capacity_factor)
    dropped = 1.0 - keep.float().mean()
    return Dispatch(token[keep], expert[keep], weight[keep], chosen, dropped)


@ROUTINGS.register("expert_choice")
def expert_choice_routing(probs: torch.Tensor, options: MoEConfig) -> Dispatch:
    """Each expert picks its C most probable tokens, C = ⌈c·N·k/E⌉ (c = capacity factor, 1 if
    unset): loads are equal by construction, a token may get no expert (Zhou et al. 2022,
    arXiv 2202.09368). It reads every token of the batch at once, later ones included: in a
    causal language model that leaks the future into the routing (the paper's own caveat)."""
    n_tokens, n_experts = probs.shape
    factor = options.capacity_factor or 1.0
    per_expert = min(n_tokens, capacity(n_tokens * options.top_k, n_experts, factor))
    weight, token = probs.topk(per_expert, dim=0)  # (C, E)
    expert = torch.arange(n_experts, device=probs.device).repeat(per_expert)
    token, weight = token.flatten(), weight.flatten()
    served = torch.zeros(n_tokens, device=probs.device).index_fill_(0, token, 1.0)
    chosen = torch.full((n_experts,), per_expert, device=probs.device)
    return Dispatch(token, expert, weight, chosen, 1.0 - served.mean())


class Expert(nn.Module):
    """One SwiGLU expert: (SiLU(x·W1) ⊙ x·W3)·W2."""

    def __init__(self, d_model: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, hidden, bias=False)
        self.w3 = nn.Linear(d_model, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d_model, bias=False)

    def init_weights(self, init: Init) -> None:
        init.matrix(self.w1, self.w3)
        init.output(self.w2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def expert_width(cfg: ModelConfig) -> int:
    """⌈H/(k + shared)⌉ with H the dense gated MLP's width, unless `moe.expert_hidden` is set."""
    options = cfg.moe
    if options.expert_hidden is not None:
        return options.expert_hidden
    return -(-hidden_width(cfg, gated=True) // (options.top_k + options.shared_experts))


@dataclass(frozen=True)
class RoutingStats:
    """One MoE layer's routing in its last training forward (detached)."""

    load: torch.Tensor  # (E,) share of the chosen assignments per expert (sums to 1)
    top_share: torch.Tensor  # () share of tokens choosing the most chosen expert
    dropped: torch.Tensor  # () share of assignments dropped for capacity
    entropy: torch.Tensor  # () mean entropy of the router's distribution, nats


@MLPS.register("moe")
class MoE(nn.Module):
    """Σ_{e ∈ chosen(x)} g_e(x)·Expert_e(x) + Shared(x), g = softmax(x·W_r) (Shazeer et al. 2017;
    Switch: Fedus et al. 2021; Mixtral: Jiang et al. 2024; DeepSeekMoE: Dai et al. 2024)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.options = options = cfg.moe
        d, hidden = cfg.d_model, expert_width(cfg)
        self.router = nn.Linear(d, options.experts, bias=False)
        self.experts = nn.ModuleList(Expert(d, hidden) for _ in range(options.experts))
        shared = options.shared_experts
        self.shared = Expert(d, shared * hidden) if shared else None
        self.shared_gate = nn.Linear(d, 1, bias=False) if shared and options.shared_gate else None
        self.route = ROUTINGS.get(options.routing)
        self.stats: RoutingStats | None = None

    def forward(self, x: torch.Tensor, ctx: ForwardContext | None = None) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])  # (N, d)
        logits = self.router(flat)  # (N, E)
        dtype = torch.promote_types(logits.dtype, torch.float32)  # route in fp32 under bf16
        probs = torch.softmax(logits.to(dtype), dim=-1)
        dispatch = self.route(probs, self.options)
        out = self.combine(flat, dispatch)
        if self.shared is not None:
            shared = self.shared(flat)
            if self.shared_gate is not None:
                shared = torch.sigmoid(self.shared_gate(flat)) * shared
            out = out + shared.to(out.dtype)
        if ctx is not None and self.training:
            ctx.aux_losses.append(self.aux_loss(logits.to(dtype), probs, dispatch))
            self.stats = routing_stats(probs, dispatch, self.options.top_k)
        return out.view(shape)

    def combine(self, flat: torch.Tensor, dispatch: Dispatch) -> torch.Tensor:
        """Σ over kept assignments of gate·Expert_e(x_token), each expert run once on its
        tokens (grouped by a stable sort). An expert with no token still runs, on zero rows:
        every parameter gets a gradient each step, as DDP's all-reduce and AdamW expect."""
        order = dispatch.expert.argsort(stable=True)
        counts = torch.bincount(dispatch.expert, minlength=len(self.experts)).tolist()
        tokens, weights = dispatch.token[order].split(counts), dispatch.weight[order].split(counts)
        out = torch.zeros_like(flat)
        for expert, token, weight in zip(self.experts, tokens, weights, strict=True):
            y = expert(flat[token]) * weight[:, None]
            out = out.index_add(0, token, y.to(out.dtype))
        return out

    def aux_loss(self, logits: torch.Tensor, probs: torch.Tensor, d: Dispatch) -> torch.Tensor:
        """α·E·Σ_e f_e·P_e + β·mean (log Σ_e e^{z_e})². f_e = assignments chosen for e per token
        (summing to k, as transformers' `load_balancing_loss_func`), P_e = mean router
        probability (Fedus et al. 2021, eq. 4; GShard); z-loss: Zoph et al. 2022, eq. 5."""
        options = self.options
        loss = logits.new_zeros(())
        if options.balance_loss:
            f = d.chosen.to(probs.dtype) / probs.shape[0]
            loss = loss + options.balance_loss * options.experts * (f * probs.mean(dim=0)).sum()
        if options.router_z_loss:
            z = torch.logsumexp(logits, dim=-1).square().mean()
            loss = loss + options.router_z_loss * z
        return loss

    def inactive_parameters(self) -> int:
        """Parameters of the routed experts a token does not use: (E − k) experts' worth."""
        one = sum(p.numel() for p in self.experts[0].parameters())
        return (self.options.experts - self.options.top_k) * one


@torch.no_grad()
def routing_stats(probs: torch.Tensor, dispatch: Dispatch, top_k: int) -> RoutingStats:
    chosen = dispatch.chosen.to(probs.dtype)
    entropy = -(probs * torch.log(probs.clamp_min(1e-30))).sum(dim=-1).mean()
    return RoutingStats(
        load=(chosen / chosen.sum()).detach(),
        top_share=chosen.max() / probs.shape[0],
        dropped=dispatch.dropped.detach(),
        entropy=entropy,
    )


def moe_stats(model: nn.Module) -> list[RoutingStats]:
    """The routing statistics each MoE layer kept from the last training forward (empty
    without MoE; a shared layer reports its last call). Device tensors: nothing is read."""
    return [m.stats for m in model.modules() if isinstance(m, MoE) and m.stats is not None]


def routing_metrics(stats: list[RoutingStats]) -> dict[str, Any]:
    """The metrics.jsonl fields of one step's MoE layers (empty without MoE): per-layer expert
    load and top-expert share of tokens, mean dropped fraction and mean router entropy."""
    if not stats:
        return {}
    return {
        "moe_load": [[round(v, 6) for v in s.load.tolist()] for s in stats],
        "moe_top_share": [round(float(s.top_share), 6) for s in stats],
        "moe_dropped": sum(float(s.dropped) for s in stats) / len(stats),
        "moe_router_entropy": sum(float(s.entropy) for s in stats) / len(stats),
    }
