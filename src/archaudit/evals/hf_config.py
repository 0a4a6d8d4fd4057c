"""A foreign Hugging Face folder's config.json, its sizes checked before a model is built.

transformers allocates what config.json says: `vocab_size = 1e9` with a hidden size of 32 is a
128 GB embedding, allocated (or swapped) before anything fails. So the sizes that set the
weights' memory are read first (as a regular file: a FIFO is never waited on), each must be a
positive integer, and the float32 weights they imply must fit in this machine's memory. The
numbers the forward pass computes with (`rope_theta`, a norm's epsilon, dropout rates) must be
finite and in their range: `rope_theta = 0` or NaN, or `rms_norm_eps = -1`, was scored without
a word (NaN logits, or scores of another model than the one the file describes).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archaudit.errors import DataError
from archaudit.files import read_json

SIZE_KEYS = (
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
    "num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size",
)  # fmt: skip
"""The sizes transformers allocates by (absent ones are its defaults, which are sane)."""
FLOAT32 = 4


@dataclass(frozen=True)
class Bound:
    """Where one of config.json's numbers may lie: finite, above `low` (or at it, with
    `low_closed`), at most `high`."""

    low: float
    high: float = math.inf
    low_closed: bool = False

    def holds(self, value: float) -> bool:
        above = value >= self.low if self.low_closed else value > self.low
        return math.isfinite(value) and above and value <= self.high

    def __str__(self) -> str:
        left = "[" if self.low_closed else "("
        right = "∞)" if self.high == math.inf else f"{self.high:g}]"
        return f"a finite number in {left}{self.low:g}, {right}"


EPSILON, RATE = Bound(0.0, 1.0), Bound(0.0, 1.0, low_closed=True)
NUMBER_KEYS: dict[str, Bound] = {
    "rope_theta": Bound(0.0), "rotary_emb_base": Bound(0.0), "partial_rotary_factor": EPSILON,
    "rms_norm_eps": EPSILON, "layer_norm_eps": EPSILON, "layer_norm_epsilon": EPSILON,
    "norm_eps": EPSILON, "attention_dropout": RATE, "hidden_dropout": RATE, "resid_pdrop": RATE,
    "embd_pdrop": RATE, "attn_pdrop": RATE, "attn_logit_softcapping": Bound(0.0),
    "final_logit_softcapping": Bound(0.0), "router_aux_loss_coef": Bound(0.0, low_closed=True),
}  # fmt: skip
"""The numbers the forward pass computes with, and their ranges (absent or null: transformers'
default)."""


def check_hf_config(folder: Path) -> None:
    """Refuse, in one line naming config.json and the key, a config whose sizes are not positive
    integers, whose numbers are out of their range (`NUMBER_KEYS`), or whose float32 weights
    would not fit in memory."""
    path = folder / "config.json"
    config = read_json(path)
    if not isinstance(config, dict):
        raise DataError(f"{path} holds {type(config).__name__} where a config object belongs")
    sizes = {key: _size(path, key, config[key]) for key in SIZE_KEYS if config.get(key) is not None}
    for key, bound in NUMBER_KEYS.items():
        if config.get(key) is not None:
            _number(path, key, config[key], bound)
    needed = weights_bytes(sizes)
    memory = physical_memory()
    if needed > memory:
        shown = ", ".join(f"{k} = {v:,}" for k, v in sizes.items() if k in _LARGEST)
        raise DataError(
            f"{path}: {shown} make about {needed / 2**30:,.0f} GiB of float32 weights, more than "
            f"this machine's {memory / 2**30:,.0f} GiB of memory; is the config edited?"
        )


_LARGEST = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers")


def _size(path: Path, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DataError(f"{path}: {key} = {value!r:.40} must be a positive whole number")
    return value


def _number(path: Path, key: str, value: Any, bound: Bound) -> None:
    number = (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    )
    if number is None or not bound.holds(number):
        raise DataError(f"{path}: {key} = {value!r:.40} must be {bound}; is the config edited?")


def weights_bytes(sizes: dict[str, int]) -> float:
    """A float32 estimate of the weights: the embedding and its head, a learned position table,
    and per layer the attention and every expert's (or the dense) MLP. A float: no size
    overflows it."""
    hidden = float(sizes.get("hidden_size", 1))
    embedding = 2.0 * sizes.get("vocab_size", 1) * hidden
    mlp_width = sizes.get("moe_intermediate_size") or sizes.get("intermediate_size", 1)
    experts = max(sizes.get(k, 1) for k in ("num_experts", "num_local_experts", "n_routed_experts"))
    per_layer = 4.0 * hidden * hidden + 3.0 * hidden * mlp_width * experts
    positions = sizes.get("max_position_embeddings", 1) * hidden  # a learned table, at most
    return FLOAT32 * (embedding + positions + sizes.get("num_hidden_layers", 1) * per_layer)


def physical_memory() -> float:
    """This machine's memory in bytes (∞ where the system does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return math.inf
