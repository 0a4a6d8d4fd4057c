"""The model a recipe trains: its vocabulary is the recipe's tokenizer's.

The one place a `ModelConfig` gets its `vocab_size`: where it is built for training (the
audit file's scales and arms, `archaudit train`), so that everything after it (the plan's
parameter counts and parameter match, the probes, the trainer) sees the shape that trains.
The trainer only checks it.
"""

from __future__ import annotations

import dataclasses

from archaudit.config import ModelConfig, Recipe

_VOCABULARIES: dict[tuple[object, ...], int] = {}
"""Tokenizer vocabularies by the recipe fields a tokenizer depends on: a plan of many arms
learns (or reads from the cache) a BPE tokenizer once."""


def trained_model(model: ModelConfig, recipe: Recipe) -> ModelConfig:
    """`model` with the vocabulary of `recipe`'s tokenizer."""
    from archaudit.data.corpus import recipe_tokenizer

    key = (
        recipe.tokenizer, recipe.corpus_path, recipe.corpus_chars, recipe.data_seed,
        recipe.val_fraction,
    )  # fmt: skip
    if key not in _VOCABULARIES:
        _VOCABULARIES[key] = recipe_tokenizer(recipe).vocab_size
    vocab = _VOCABULARIES[key]
    return model if model.vocab_size == vocab else dataclasses.replace(model, vocab_size=vocab)
