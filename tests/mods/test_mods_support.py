"""Helpers shared by the formula tests (tests/mods holds only test_mods_* files, so this is a
plain module they import, not a conftest). It holds no tests itself."""

from __future__ import annotations

import torch

from archaudit.config import ModelConfig
from archaudit.model import build_model
from archaudit.mods import resolve_arm

FORMULA_TESTED: set[str] = set()


def formula(*names: str):
    """Mark a test as the formula test of these modifications; completeness is checked in
    test_mods_registry.py."""
    FORMULA_TESTED.update(names)
    return lambda test: test


def build_arm(spec: str, **sizes):
    """The model of arm `spec` at the given sizes, initialised from seed 0."""
    torch.manual_seed(0)
    return build_model(resolve_arm(spec).apply(ModelConfig(**sizes)))


def rms(x: torch.Tensor, gain: torch.Tensor | None = None, eps: float = 1e-5) -> torch.Tensor:
    """RMSNorm written out: x / √(mean(x²) + ε) · g."""
    y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)
    return y if gain is None else y * gain
