"""The hand-written Transformer. `build_model(cfg)` makes one; the slot registries
(`NORMS`, `POSITIONS`, `SCORES`, `ATTENTIONS`, `MLPS`, `BLOCKS`, `RESIDUALS`, `STREAMS`,
`HEADS`) accept new components, so a modification that fits a slot never edits the model
file."""

import archaudit.model.blocks  # noqa: F401  (registers the block variants)
from archaudit.model.attention import ATTENTIONS
from archaudit.model.heads import HEADS
from archaudit.model.mlp import MLPS
from archaudit.model.norms import NORMS
from archaudit.model.position import POSITIONS
from archaudit.model.scores import SCORES
from archaudit.model.streams import STREAMS
from archaudit.model.transformer import (
    BLOCKS,
    RESIDUALS,
    SLOTS,
    Transformer,
    build_model,
    count_parameters,
    training_flops_per_token,
)

__all__ = [
    "ATTENTIONS",
    "BLOCKS",
    "HEADS",
    "MLPS",
    "NORMS",
    "POSITIONS",
    "RESIDUALS",
    "SCORES",
    "SLOTS",
    "STREAMS",
    "Transformer",
    "build_model",
    "count_parameters",
    "training_flops_per_token",
]
