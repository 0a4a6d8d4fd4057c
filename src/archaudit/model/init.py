"""Weight initialisation, declared by each module for its own weights.

The recipe draws every matrix from normal(0, σ) and the projections that write into the
residual stream (W_O, the MLP's W_2) from normal(0, σ/√(2L)) (GPT-2). A module whose weights
have such roles says so in its `init_weights(init)`, naming each weight, as torchtitan's modules
do:

    def init_weights(self, init: Init) -> None:
        init.query_key(self.q_proj, self.k_proj)
        init.matrix(self.v_proj)
        init.output(self.o_proj)

A module that declares nothing gets every matrix in it at normal(0, σ), which is the recipe's
rule for a plain matrix. A block may change what its sublayers draw: DeepNorm scales them by its
β (`Init.scaled`). Weights are drawn in module order, so one seed gives one model.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch
from torch import nn

from archaudit.config import ModelConfig
from archaudit.errors import ConfigError

Weighted = nn.Linear | nn.Embedding


@runtime_checkable
class DeclaresInit(Protocol):
    """A module that draws its own weights."""

    def init_weights(self, init: Init) -> None: ...


@dataclass(frozen=True)
class Init:
    """The draws of one model: σ, the residual outputs' σ, and the gain of the current block."""

    std: float
    """σ of every matrix (`model.init.std`)."""
    output_std: float
    """σ of the projections into the residual stream: σ/√(2L) with `model.init.scale_residual`."""
    gain: float = 1.0
    """Multiplies each matrix of a block's sublayers but queries and keys (DeepNorm's β)."""
    drawn: set[int] = field(default_factory=set, compare=False, repr=False)
    """ids of the weights drawn so far, shared by every `scaled` copy."""

    @classmethod
    def of(cls, cfg: ModelConfig) -> Init:
        init = cfg.init
        scale = math.sqrt(2 * cfg.n_layers) if init.scale_residual else 1.0
        return cls(std=init.std, output_std=init.std / scale)

    def scaled(self, gain: float) -> Init:
        """The same draws with every scalable matrix multiplied by `gain` as well."""
        return dataclasses.replace(self, gain=self.gain * gain)

    def query_key(self, *layers: nn.Linear) -> None:
        """Queries and keys: normal(0, σ), never scaled (DeepNet leaves W_Q and W_K alone)."""
        self._draw(layers, self.std, 1.0)

    def matrix(self, *layers: Weighted) -> None:
        """A plain matrix: normal(0, σ)·gain."""
        self._draw(layers, self.std, self.gain)

    def output(self, *layers: nn.Linear) -> None:
        """A projection into the residual stream: normal(0, σ_out)·gain."""
        self._draw(layers, self.output_std, self.gain)

    def module(self, module: nn.Module) -> None:
        """Draw a module's weights: by its own `init_weights` if it declares one, else each
        matrix at normal(0, σ)·gain, children in order."""
        if isinstance(module, DeclaresInit):
            module.init_weights(self)
        elif isinstance(module, Weighted):
            self.matrix(module)
        else:
            for child in module.children():
                self.module(child)

    @torch.no_grad()
    def _draw(self, layers: tuple[Weighted, ...], std: float, gain: float) -> None:
        for layer in layers:
            if not layer.weight.is_meta:  # a shapes-only model (plan) has nothing to draw
                nn.init.normal_(layer.weight, mean=0.0, std=std)
                if gain != 1.0:
                    layer.weight.mul_(gain)
            self.drawn.add(id(layer.weight))


def embedding(rows: int, dim: int) -> nn.Embedding:
    """`nn.Embedding(rows, dim)`, whose weight `init_weights` draws. On the meta device (the
    plan's shapes-only build) torch's own draw is skipped: there, `normal_` imports
    torch._dynamo, 1.5 s of every `plan`. Elsewhere it is kept, so the RNG stream is unchanged."""
    if torch.get_default_device().type == "meta":
        return nn.Embedding(rows, dim, _weight=torch.empty(rows, dim))
    return nn.Embedding(rows, dim)


def init_weights(model: nn.Module, cfg: ModelConfig) -> None:
    """Draw every weight of `model`; a matrix that a module's `init_weights` forgot is an error
    naming it, so a component cannot keep torch's default init by accident."""
    init = Init.of(cfg)
    init.module(model)
    for name, module in model.named_modules():
        if isinstance(module, Weighted) and id(module.weight) not in init.drawn:
            raise ConfigError(
                f"{name}.weight is never initialised: draw it in the init_weights(init) of the "
                "module that owns it (init.matrix, init.output or init.query_key)"
            )
