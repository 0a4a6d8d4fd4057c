"""A foreign Hugging Face folder's config.json, its sizes checked before a model is built.

transformers allocates what config.json says: `vocab_size = 1e9` with a hidden size of 32 is a
128 GB embedding, allocated (or swapped) before anything fails. So the sizes that set the
weights' memory are read first (as a regular file: a FIFO is never waited on), each must be a
positive integer, and the float32 weights they imply must fit in this machine's memory.
"""

from __future__ import annotations

import math
import os
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


def check_hf_config(folder: Path) -> None:
    """Refuse, in one line naming config.json, a config whose sizes are not positive integers or
    whose float32 weights would not fit in memory."""
    path = folder / "config.json"
    config = read_json(path)
    if not isinstance(config, dict):
        raise DataError(f"{path} holds {type(config).__name__} where a config object belongs")
    sizes = {key: _size(path, key, config[key]) for key in SIZE_KEYS if config.get(key) is not None}
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
