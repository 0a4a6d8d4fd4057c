"""Deterministic batches keyed by (data seed, step, micro-step, rank): no sampler state to save.

A batch is a pure function of its key, so a run resumed at step s draws exactly the batches the
uninterrupted run drew, and data-parallel ranks draw disjoint slices of the same global batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from archaudit.data.shards import TokenShards


class BatchSampler:
    def __init__(self, tokens: np.ndarray | TokenShards, seq_len: int, seed: int) -> None:
        if len(tokens) <= seq_len + 1:
            raise ValueError(f"split has {len(tokens)} tokens, fewer than one sequence ({seq_len})")
        self.tokens, self.seq_len, self.seed = tokens, seq_len, seed

    def offsets(self, key: tuple[int, ...], n: int) -> np.ndarray:
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.seed, *key])))
        return rng.integers(0, len(self.tokens) - self.seq_len - 1, size=n)

    def batch(
        self, key: tuple[int, ...], n: int, rank: int = 0, world: int = 1
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's share of n sequences: inputs (n/world, T) and next-token targets, int64.
        The n offsets depend on the key alone, so the global batch is the same for any world."""
        share = self.offsets(key, n)[rank * n // world : (rank + 1) * n // world]
        idx = share[:, None] + np.arange(self.seq_len + 1)[None, :]
        window = torch.from_numpy(np.asarray(self.tokens[idx]).astype(np.int64))
        return window[:, :-1], window[:, 1:]
