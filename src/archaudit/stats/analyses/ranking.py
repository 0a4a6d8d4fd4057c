"""Rank correlations (Spearman's ρ and Kendall's τ-b, ties handled as scipy does), and their bounds
over every pair of rankings that a set of simultaneous intervals allows."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats


def rankdata(values: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the average of the ranks they span (scipy's)."""
    return stats.rankdata(values, method="average")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ (scipy's); NaN when either side is constant."""
    return _correlation(stats.spearmanr, x, y)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b (scipy's); NaN when either side is constant."""
    return _correlation(stats.kendalltau, x, y)


def _correlation(method: Callable[..., Any], x: np.ndarray, y: np.ndarray) -> float:
    if np.ptp(np.asarray(x)) == 0 or np.ptp(np.asarray(y)) == 0:
        return math.nan  # scipy warns and returns NaN: the same answer without the warning
    return float(method(x, y).statistic)


def interval_order(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """o[i, j] = +1 when item i is surely above item j (low_i > high_j), −1 when surely below,
    0 when their intervals overlap: the order every vector inside the intervals shares."""
    above = (np.asarray(low)[:, None] > np.asarray(high)[None, :]).astype(int)
    return above - above.T


def rank_ranges(order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(best, worst) rank of each item (1 = highest) over every vector consistent with `order`."""
    best = 1 + np.count_nonzero(order == -1, axis=1)
    worst = len(order) - np.count_nonzero(order == 1, axis=1)
    return best, worst


def kendall_bounds(order_x: np.ndarray, order_y: np.ndarray) -> tuple[float, float]:
    """Bounds on Kendall's τ of any two untied vectors consistent with the two orders: a pair
    is surely concordant (discordant) only when both orders fix it the same (opposite) way."""
    agree = (order_x * order_y)[np.triu_indices(len(order_x), k=1)]
    low = np.where(agree == 1, 1.0, -1.0).mean()
    high = np.where(agree == -1, -1.0, 1.0).mean()
    return float(low), float(high)


def spearman_bounds(order_x: np.ndarray, order_y: np.ndarray) -> tuple[float, float]:
    """Bounds on Spearman's ρ of any two untied vectors consistent with the two orders.

    ρ = 1 − 6Σd²/(n(n² − 1)), each |d| bounded by the items' rank ranges; and Daniels'
    inequality |3τ − 2ρ| <= 1 carries the bounds on τ over to ρ; the tighter of the two holds.
    """
    n = len(order_x)
    (best_x, worst_x), (best_y, worst_y) = rank_ranges(order_x), rank_ranges(order_y)
    near = np.maximum(0, np.maximum(best_x - worst_y, best_y - worst_x))
    far = np.maximum(worst_x - best_y, worst_y - best_x)
    scale = 6.0 / (n * (n * n - 1))
    tau_low, tau_high = kendall_bounds(order_x, order_y)
    low = max(-1.0, 1.0 - scale * float(np.sum(far**2)), (3.0 * tau_low - 1.0) / 2.0)
    high = min(1.0 - scale * float(np.sum(near**2)), (3.0 * tau_high + 1.0) / 2.0)
    return low, high
