"""Every modification's closed-form parameter delta equals the difference of real parameter
counts, at several model sizes."""

from __future__ import annotations

import functools

import pytest

from archaudit.config import ModelConfig
from archaudit.model import build_model, count_parameters
from archaudit.mods import list_modifications, resolve_arm
from archaudit.mods.params import baseline_params

SIZES = [
    dict(vocab_size=64, context_length=16, d_model=64, n_layers=2, n_heads=4),
    dict(vocab_size=100, context_length=32, d_model=128, n_layers=3, n_heads=8),
    dict(vocab_size=50, context_length=24, d_model=192, n_layers=2, n_heads=6),
]
NAMES = [mod.name for mod in list_modifications()]


@functools.cache
def baseline_count(size: int) -> int:
    return count_parameters(build_model(ModelConfig(**SIZES[size])))


@pytest.mark.parametrize("size", range(len(SIZES)))
def test_baseline_parameter_formula(size):
    assert baseline_params(ModelConfig(**SIZES[size])) == baseline_count(size)


@pytest.mark.parametrize("name", NAMES)
def test_parameter_delta_equals_its_formula(name):
    arm = resolve_arm(name)
    for size, sizes in enumerate(SIZES):
        cfg = ModelConfig(**sizes)
        actual = count_parameters(build_model(arm.apply(cfg))) - baseline_count(size)
        assert arm.mods[0].params_delta(cfg) == actual, (name, sizes)
