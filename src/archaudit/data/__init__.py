"""Tokenizers, corpora, deterministic batching and synthetic probe generators."""
