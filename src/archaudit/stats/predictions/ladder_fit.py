"""Per-arm curves Δₐ(log N) over a ladder of scales, as linear smoothers of the observed Δ̂.

Every curve here predicts an arm's Δ at a new log N as a weighted sum of that arm's Δ̂ at the
scales fitted, with weights from the seed noise (1/Var(Δ̂), weighted least squares), each arm
on its own (arms that scale differently are never forced onto one rate):

- `single_scale`: Δₐ(N) = Δ̂ₐ at the largest scale fitted (DataDecide's strong baseline);
- `constant`: Δₐ(N) = bₐ, the weighted mean over the scales: the effect does not move;
- `log_linear`: Δₐ(N) = bₐ + cₐ·log N, a weighted line: effects may fade, grow or cross zero.

Because each is linear in Δ̂, so is any weighted mixture of them (`backtest.stack`), and the
seed-noise variance of a prediction is exact: Σₛ Lₛ²·Var(Δ̂ₛ) for its weights L.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LadderArrays:
    """One metric's arm means over the trained scales (small to large); row 0 is the baseline."""

    x: np.ndarray
    """(S,) log of the parameters at each scale."""
    means: np.ndarray
    """(m + 1, S)"""
    counts: np.ndarray
    """(m + 1, S) finished seeds."""
    sigma: np.ndarray
    """(S,) the seed σ at each scale, pooled over every arm with >= 2 seeds (`predict` gives
    every scale one σ, pooled over the scales too: `predict.pooled_over_scales`)."""
    dof: np.ndarray
    """(S,) its degrees of freedom."""

    @property
    def deltas(self) -> np.ndarray:
        """(m, S) arm mean − baseline mean."""
        return self.means[1:] - self.means[:1]

    @property
    def variances(self) -> np.ndarray:
        """(m, S) the seed variance of each Δ̂."""
        return self.sigma**2 * (1.0 / self.counts[1:] + 1.0 / self.counts[:1])

    def first(self, scales: int) -> LadderArrays:
        """The `scales` smallest scales."""
        return LadderArrays(
            self.x[:scales],
            self.means[:, :scales],
            self.counts[:, :scales],
            self.sigma[:scales],
            self.dof[:scales],
        )


Smoother = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""(x (S,), w (m, S) the weights 1/Var(Δ̂), new (T,)) → L (m, T, S): prediction = L @ Δ̂."""


def _single_scale(x: np.ndarray, w: np.ndarray, new: np.ndarray) -> np.ndarray:
    weights = np.zeros((len(w), len(new), len(x)))
    weights[..., -1] = 1.0
    return weights


def _constant(x: np.ndarray, w: np.ndarray, new: np.ndarray) -> np.ndarray:
    share = w / w.sum(-1, keepdims=True)  # (m, S)
    return np.repeat(share[:, None, :], len(new), axis=1)


def weighted_line(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """((m, S) each scale's share of the weighted mean, (m, S) its lever on the slope (slope =
    lever @ Δ̂), (m,) Σw·dx², dx from the weighted mean of x: the slope's variance is its
    inverse) of weighted least squares with weights w = 1/Var(Δ̂)."""
    share = w / w.sum(-1, keepdims=True)
    dx = x - (share * x).sum(-1, keepdims=True)  # (m, S) centred on the weighted mean
    spread = (w * dx**2).sum(-1)
    return share, (w * dx) / spread[:, None], spread


def _log_linear(x: np.ndarray, w: np.ndarray, new: np.ndarray) -> np.ndarray:
    share, lever, _ = weighted_line(x, w)
    at = new[None, :] - (share * x).sum(-1, keepdims=True)  # (m, T)
    return share[:, None, :] + at[..., None] * lever[:, None, :]


SMOOTHERS: dict[str, tuple[Smoother, int]] = {
    "single_scale": (_single_scale, 1),
    "constant": (_constant, 1),
    "log_linear": (_log_linear, 2),
}
"""Curve → (its smoother, the fewest scales it fits)."""
CURVES = tuple(name for name in SMOOTHERS if name != "single_scale")
"""The curves mixed with the single-scale prediction (CURVES order is the report's)."""


def smoother_weights(
    mix: dict[str, float], x: np.ndarray, w: np.ndarray, new: np.ndarray
) -> np.ndarray:
    """(m, T, S) the weights of the mixture Σ mix[curve]·curve at the log N in `new`."""
    return sum(
        (share * SMOOTHERS[name][0](x, w, new) for name, share in mix.items() if share),
        start=np.zeros((len(w), len(new), len(x))),
    )


def predict_linear(
    weights: np.ndarray, deltas: np.ndarray, variances: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """((m, T) predictions, (m, T) their seed-noise variances) from (m, T, S) weights."""
    point = np.einsum("mts,ms->mt", weights, deltas)
    return point, np.einsum("mts,ms->mt", weights**2, variances)
