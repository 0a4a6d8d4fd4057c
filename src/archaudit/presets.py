"""Named model sizes and a matching default recipe: `archaudit train --preset tiny`.

A size is an entry in a dict, not a copy of code (torchtitan's habit). Tokens per step are held
fixed across sizes so that presets can serve as the scales of an audit ladder.
"""

from __future__ import annotations

from typing import Any

from archaudit.errors import ConfigError, did_you_mean

MODEL_PRESETS: dict[str, dict[str, Any]] = {
    # ~0.1M params: seconds on a laptop CPU, for tests and the demo.
    "tiny": dict(d_model=64, n_layers=2, n_heads=4, context_length=128),
    # ~0.8M params: the demo's second scale.
    "small": dict(d_model=128, n_layers=4, n_heads=4, context_length=128),
    # ~3M params: the throughput benchmark's size.
    "base": dict(d_model=256, n_layers=4, n_heads=4, context_length=256),
    "medium": dict(d_model=512, n_layers=8, n_heads=8, context_length=512),
    "large": dict(d_model=1024, n_layers=16, n_heads=16, context_length=1024),
}

RECIPE_PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(steps=200, batch_tokens=2048, lr=3e-3, eval_every=50, checkpoint_every=50),
    "small": dict(steps=300, batch_tokens=2048, lr=2e-3, eval_every=100, checkpoint_every=100),
    "base": dict(steps=1000, batch_tokens=4096, lr=1e-3),
    "medium": dict(steps=5000, batch_tokens=16384, lr=6e-4, checkpoint_every=500, eval_every=500),
    "large": dict(steps=20000, batch_tokens=65536, lr=3e-4, checkpoint_every=1000, eval_every=1000),
}


def preset(name: str) -> dict[str, dict[str, Any]]:
    """The `{"model": ..., "recipe": ...}` tables of a named preset."""
    if name not in MODEL_PRESETS:
        raise ConfigError(f"unknown preset {name!r}{did_you_mean(name, MODEL_PRESETS)}")
    return {"model": dict(MODEL_PRESETS[name]), "recipe": dict(RECIPE_PRESETS[name])}
