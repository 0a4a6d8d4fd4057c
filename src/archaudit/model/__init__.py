"""The hand-written Transformer. `build_model(cfg)` makes one; the slot registries
(`NORMS`, `POSITIONS`, `SCORES`, `ATTENTIONS`, `MLPS`, `BLOCKS`, `CONNECTIONS`, `STREAMS`,
`HEADS`) accept new components, so a modification that fits a slot never edits the model
file."""

from archaudit.model.attention import ATTENTIONS
from archaudit.model.heads import HEADS
from archaudit.model.mlp import MLPS
from archaudit.model.norms import NORMS
from archaudit.model.position import POSITIONS
from archaudit.model.residual import CONNECTIONS, STREAMS
from archaudit.model.scores import SCORES
from archaudit.model.transformer import (
    BLOCKS,
    SLOTS,
    Transformer,
    build_model,
    count_parameters,
    training_flops_per_token,
)

__all__ = [
    "ATTENTIONS",
    "BLOCKS",
    "CONNECTIONS",
    "HEADS",
    "MLPS",
    "NORMS",
    "POSITIONS",
    "SCORES",
    "SLOTS",
    "STREAMS",
    "Transformer",
    "build_model",
    "count_parameters",
    "training_flops_per_token",
]
