"""What one training run is and what it yields: `RunInputs`, settled by `train` before a trainer
is built, and `TrainResult`, stored in train.json."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from archaudit.config import ModelConfig, Recipe
from archaudit.data.corpus import TokenCorpus
from archaudit.train.distributed import World


@dataclass(frozen=True)
class TrainResult:
    status: str  # "ok" | "diverged"
    steps: int
    tokens: int
    final_loss: float | None
    val_loss: float | None
    tokens_per_s: float
    params: int
    diverged_step: int | None = None
    flops_per_token: float = 0.0
    active_params: int = 0
    """Parameters a token's forward multiplies by (MoE: k of E experts); 0 in older results."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainResult:
        return cls(**data)


@dataclass(frozen=True)
class RunInputs:
    """What `train` settles before a trainer is built: the run and where it trains."""

    model_cfg: ModelConfig
    """With the tokenizer's vocabulary."""
    recipe: Recipe
    seed: int
    corpus: TokenCorpus
    spec: dict[str, Any]
    """The run's identity (`provenance.run_spec`), written to spec.json."""
    out: Path
    device: torch.device
    world: World
