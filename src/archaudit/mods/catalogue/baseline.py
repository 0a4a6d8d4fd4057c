"""The baseline arm: the shared recipe's model, unchanged."""

from __future__ import annotations

from typing import Any

from archaudit.config import ModelConfig
from archaudit.mods.registry import Citation, modification
from archaudit.names import BASELINE


@modification(
    BASELINE,
    family=BASELINE,
    citation=Citation("Touvron et al.", 2023, "LLaMA, arXiv 2302.13971"),
    description="the shared recipe's model: pre-RMSNorm, RoPE, multi-head attention, SwiGLU",
    formula="x ← x + F(RMSNorm(x)); MLP = (SiLU(x·W1) ⊙ x·W3)·W2; untied head, no biases",
)
def baseline(cfg: ModelConfig) -> dict[str, Any]:
    return {}
