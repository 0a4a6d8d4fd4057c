"""Bootstrap helpers. Every bootstrap takes an explicit seed, so its output is reproducible."""

from __future__ import annotations

import math

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


def varies(replicates: np.ndarray) -> bool:
    """Whether the finite bootstrap replicates take more than one value."""
    finite = replicates[np.isfinite(replicates)]
    return len(finite) > 0 and float(np.ptp(finite)) > 0.0


def estimable_interval(replicates: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval, or (NaN, NaN) when the replicates do not vary: a zero-width
    interval would claim a certainty the resampling cannot give (nothing was resampled)."""
    if not varies(replicates):
        return math.nan, math.nan
    return percentile_interval(replicates, confidence)
