"""What a run was made with: its resolved spec (model, recipe, seed, corpus), library versions,
hardware, and a hash of archaudit's own source (modded-nanogpt's habit: a result is only as good
as the record of what produced it). The spec also decides whether a run directory holds the run
asked for: a different one is refused, never resumed or reported."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

import archaudit
from archaudit.config import ModelConfig, Recipe, to_dict
from archaudit.data.corpus import TokenCorpus
from archaudit.data.identity import recipe_hash
from archaudit.errors import ConfigError

# What identifies a run; everything else in spec.json is derived or informational.
IDENTITY = ("model", "recipe", "seed", "corpus_key")
_ABSENT = object()


def source_hash() -> str:
    """sha256 over archaudit's .py files (path and content), so uncommitted edits show."""
    root = Path(archaudit.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def git_commit() -> str | None:
    root = Path(archaudit.__file__).parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def environment(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {
        "archaudit": archaudit.__version__,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "numpy": np.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),  # "high" = TF32
        "device": str(device),
        "source_hash": source_hash(),
        "git_commit": git_commit(),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        info["cuda"] = torch.version.cuda
    return info


def run_spec(cfg: ModelConfig, recipe: Recipe, seed: int, corpus: TokenCorpus) -> dict[str, Any]:
    """spec.json: the resolved model config and recipe, the recipe hash, seed and corpus."""
    return {
        "model": to_dict(cfg),
        "recipe": to_dict(recipe),
        "recipe_hash": recipe_hash(recipe),
        "seed": seed,
        "tokenizer": recipe.tokenizer,
        "corpus_key": corpus.key,
        "bytes_per_token": corpus.bytes_per_token,
    }


def require_same_run(run_dir: Path, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Refuse, in one line naming the differing keys, when `run_dir`'s stored spec `old`
    describes another run than `new`. Operational recipe fields (device, threads, cadences)
    may differ: they do not change what is trained."""
    changes = [
        f"{key}: {_shown(a)} → {_shown(b)}"
        for key, (a, b) in sorted(_differences(_identity(old), _identity(new)).items())
    ]
    if changes:
        raise ConfigError(
            f"{run_dir} holds a different run ({'; '.join(changes)}); "
            "choose another --out or delete that directory"
        )


def _identity(spec: dict[str, Any]) -> dict[str, Any]:
    operational = {f.name for f in dataclasses.fields(Recipe) if not f.metadata.get("hashed", True)}
    stored = spec.get("recipe", {})  # a garbled spec.json differs in every key, never crashes
    recipe = (
        {k: v for k, v in stored.items() if k not in operational}
        if isinstance(stored, dict)
        else stored
    )
    identity = {k: spec.get(k, _ABSENT) for k in IDENTITY}
    return {**identity, "recipe": recipe}


def _differences(old: Any, new: Any, prefix: str = "") -> dict[str, tuple[Any, Any]]:
    """{dotted key: (old, new)} for every leaf that differs."""
    if isinstance(old, dict) and isinstance(new, dict):
        found: dict[str, tuple[Any, Any]] = {}
        for key in sorted(old.keys() | new.keys()):
            found |= _differences(old.get(key, _ABSENT), new.get(key, _ABSENT), f"{prefix}{key}.")
        return found
    return {} if old == new else {prefix.rstrip("."): (old, new)}


def _shown(value: Any) -> str:
    return "(absent)" if value is _ABSENT else json.dumps(value)
