"""Bootstrap helpers. Every bootstrap takes an explicit seed, so its output is reproducible."""

from __future__ import annotations

import numpy as np

_MAX_DRAWS = 2_000_000
"""Index draws held in memory at once; larger bootstraps run in chunks."""


def bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `n_boot` resamples (with replacement) of `values`."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    chunk = max(1, _MAX_DRAWS // max(n, 1))
    return np.concatenate(
        [
            values[rng.integers(0, n, size=(min(chunk, n_boot - start), n))].mean(axis=1)
            for start in range(0, n_boot, chunk)
        ]
    )


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The central `confidence` percentile interval, ignoring NaN replicates."""
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.nanpercentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)
