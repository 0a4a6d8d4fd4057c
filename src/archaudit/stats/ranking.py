"""Rank correlations (Spearman's ρ and Kendall's τ-b), with ties handled as scipy does."""

from __future__ import annotations

import math

import numpy as np


def rankdata(values: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the average of the ranks they span."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)
    return (last - (counts - 1) / 2.0)[inverse]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ: Pearson's correlation of the ranks; NaN when either side is constant."""
    rx, ry = rankdata(np.asarray(x)), rankdata(np.asarray(y))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt(float(np.sum(rx * rx) * np.sum(ry * ry)))
    return float(np.sum(rx * ry)) / denominator if denominator > 0 else math.nan


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b = (C − D)/√((n₀ − n₁)(n₀ − n₂)); NaN when either side is constant."""
    x, y = np.asarray(x), np.asarray(y)
    upper = np.triu_indices(len(x), k=1)
    dx = np.sign(x[:, None] - x[None, :])[upper]
    dy = np.sign(y[:, None] - y[None, :])[upper]
    pairs_x, pairs_y = np.count_nonzero(dx), np.count_nonzero(dy)
    denominator = math.sqrt(float(pairs_x) * float(pairs_y))
    return float(np.sum(dx * dy)) / denominator if denominator > 0 else math.nan
