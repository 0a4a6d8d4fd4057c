"""Fixtures for the evaluation tests: one tiny model trained on the embedded corpus per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from archaudit.config import ModelConfig, Recipe

TINY = ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=64)
SHORT = Recipe(
    steps=60,
    batch_tokens=2048,
    lr=1e-2,
    corpus_chars=150_000,
    device="cpu",
    eval_every=60,
    checkpoint_every=60,
)


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory: the tiny model after a short training on the synthetic language."""
    from archaudit.train import train

    run = tmp_path_factory.mktemp("trained-run")
    result = train(TINY, SHORT, run, seed=0)
    assert result.status == "ok"
    return run
