"""Per-arm curves Δₐ(log N) over a ladder of scales, fitted together, with a parametric bootstrap.

The arms of one family share what they share: the seed noise of each scale, and in the
`shared_power` model one exponent. Three curves, each fitted by weighted least squares with the
weights 1/Var(Δ̂) that the seed noise gives:

- `constant`: Δₐ(N) = bₐ, the effect does not move with scale (one number per arm);
- `shared_power`: Δₐ(N) = kₐ·(N/N_L)^(−α), α shared by every arm (a per-arm offset in log |Δ|):
  effects that fade (α > 0) or grow (α < 0) at one rate, never changing sign;
- `log_linear`: Δₐ(N) = bₐ + cₐ·log(N/N_L), two numbers per arm: effects may cross zero.

The intervals come from a parametric bootstrap: every replicate redraws each arm's mean at each
scale from its seed noise (σ itself redrawn from its chi-square law, since 3 seeds leave it
uncertain) and refits the curves, so the spread of the predictions carries both the seed noise
at every scale and the uncertainty of the fit. Misfit beyond the seed noise widens them by the
pooled reduced chi-square φ = max(1, χ²/df) (a Birge ratio).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

REJECT_LEVEL = 0.01
"""An arm's curve is rejected when its χ² goodness of fit has p below this; a rejected arm is
not extrapolated and does not widen the others' intervals."""
ALPHAS = np.linspace(-0.5, 1.5, 81)
"""The exponents `shared_power` may take: effects that grow as N^0.5 to ones that fade as
N^-1.5 (a bounded grid: a free exponent from 2 or 3 scales extrapolates wildly)."""


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
    """(S,) the seed σ at each scale, pooled over every arm with >= 2 seeds."""
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

    def without(self, arms: np.ndarray) -> LadderArrays:
        """The ladder without the arms where the (m,) mask `arms` is true."""
        rows = np.concatenate([[True], ~arms])
        return LadderArrays(self.x, self.means[rows], self.counts[rows], self.sigma, self.dof)

    def first(self, scales: int) -> LadderArrays:
        """The `scales` smallest scales."""
        return LadderArrays(
            self.x[:scales],
            self.means[:, :scales],
            self.counts[:, :scales],
            self.sigma[:scales],
            self.dof[:scales],
        )


@dataclass(frozen=True)
class CurveFit:
    """Predictions of one model at new log N, with their bootstrap draws."""

    model: str
    point: np.ndarray
    """(m, T) the fitted curves at the new points."""
    draws: np.ndarray
    """(B, m, T) the bootstrap's predictions, their spread widened by √φ."""
    chi2: np.ndarray
    """(m,) each arm's weighted squared residuals on the scales fitted."""
    arm_dof: float
    """Degrees of freedom of one arm's χ²."""
    pvalues: np.ndarray
    """(m,) each arm's χ² goodness-of-fit p-value (1 when the fit leaves no degrees of freedom)."""
    dispersion: float
    """φ = max(1, χ²/df) pooled over the arms not rejected; 1 when no degrees of freedom."""

    @property
    def rejected(self) -> np.ndarray:
        return self.pvalues < REJECT_LEVEL


Curve = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""(x (S,), y (..., m, S), w (m, S), x_new (T,)) → (predictions (..., m, T), χ² (..., m))."""


def _constant(x: np.ndarray, y: np.ndarray, w: np.ndarray, new: np.ndarray):
    level = (w * y).sum(-1) / w.sum(-1)
    chi2 = (w * (y - level[..., None]) ** 2).sum(-1)
    return np.repeat(level[..., None], len(new), axis=-1), chi2


def _log_linear(x: np.ndarray, y: np.ndarray, w: np.ndarray, new: np.ndarray):
    centre = (w * x).sum(-1) / w.sum(-1)  # (m,)
    dx = x - centre[:, None]
    level = (w * y).sum(-1) / w.sum(-1)
    slope = (w * dx * y).sum(-1) / (w * dx**2).sum(-1)
    fitted = level[..., None] + slope[..., None] * dx
    chi2 = (w * (y - fitted) ** 2).sum(-1)
    return level[..., None] + slope[..., None] * (new - centre[:, None]), chi2


def _shared_power(x: np.ndarray, y: np.ndarray, w: np.ndarray, new: np.ndarray):
    basis = np.exp(-ALPHAS[:, None] * (x - x[-1]))  # (G, S)
    wf = w[None] * basis[:, None, :]  # (G, m, S)
    scale = (y[..., None, :, :] * wf).sum(-1) / (wf * basis[:, None, :]).sum(-1)  # (..., G, m)
    fitted = scale[..., None] * basis[:, None, :]
    chi2 = (w * (y[..., None, :, :] - fitted) ** 2).sum(-1)  # (..., G, m)
    best = np.argmin(chi2.sum(-1), axis=-1)  # (...,) one exponent for every arm
    pick = np.take_along_axis
    k = pick(scale, best[..., None, None], axis=-2)[..., 0, :]
    alpha = ALPHAS[best]
    growth = np.exp(-np.asarray(alpha)[..., None, None] * (new - x[-1]))  # (..., 1, T)
    return k[..., None] * growth, pick(chi2, best[..., None, None], axis=-2)[..., 0, :]


CURVES: dict[str, tuple[Curve, float, int]] = {
    "constant": (_constant, 1.0, 0),
    "shared_power": (_shared_power, 1.0, 1),
    "log_linear": (_log_linear, 2.0, 0),
}
"""Model → (curve, parameters per arm, parameters shared by the arms)."""


def bootstrap_deltas(ladder: LadderArrays, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """(B, m, S) Δ̂ redrawn from the seed noise: every arm mean around its observed value, σ
    from its chi-square law, the baseline's draw shared by every arm as in the real Δ̂."""
    chi2 = rng.chisquare(ladder.dof, size=(n_boot, len(ladder.x)))
    sigma = ladder.sigma * np.sqrt(ladder.dof / chi2)  # (B, S)
    noise = rng.standard_normal((n_boot, *ladder.means.shape))
    means = ladder.means + noise * sigma[:, None, :] / np.sqrt(ladder.counts)
    return means[:, 1:] - means[:, :1]


def fit_curves(
    model: str, ladder: LadderArrays, new: np.ndarray, rng: np.random.Generator, n_boot: int
) -> CurveFit:
    """Fit `model` to every arm of the ladder and predict Δ at the log N in `new`. With a shared
    exponent, the arm with the worst rejected fit is left out and the rest refitted until no
    fit is rejected, so that one arm that fits no curve does not bend everyone's exponent; the
    arms left out keep their rejected χ² and NaN predictions."""
    keep, chi2 = _kept_arms(model, ladder)
    fit = _fit(model, ladder.without(~keep), new, rng, n_boot)
    if keep.all():
        return fit
    point = np.full((len(keep), len(new)), np.nan)
    draws = np.full((n_boot, len(keep), len(new)), np.nan)
    point[keep], draws[:, keep] = fit.point, fit.draws
    chi2[keep] = fit.chi2
    pvalues = np.zeros(len(keep))
    pvalues[keep] = fit.pvalues
    return dataclasses.replace(fit, point=point, draws=draws, chi2=chi2, pvalues=pvalues)


def _kept_arms(model: str, ladder: LadderArrays) -> tuple[np.ndarray, np.ndarray]:
    """(m,) the arms a shared-exponent fit keeps, and each left-out arm's χ² when it left."""
    curve, per_arm, shared = CURVES[model]
    keep = np.ones(len(ladder.deltas), dtype=bool)
    chi2 = np.zeros(len(keep))
    while shared and keep.sum() > 1:
        kept = ladder.without(~keep)
        _, fitted = curve(kept.x, kept.deltas, 1.0 / kept.variances, kept.x[-1:])
        dof = len(kept.x) - per_arm - shared / keep.sum()
        pvalues = sps.chi2.sf(fitted, dof) if dof > 0 else np.ones(len(fitted))
        if pvalues.min() >= REJECT_LEVEL:
            break
        worst = np.flatnonzero(keep)[np.argmin(pvalues)]
        keep[worst], chi2[worst] = False, fitted[np.argmin(pvalues)]
    return keep, chi2


def _fit(
    model: str, ladder: LadderArrays, new: np.ndarray, rng: np.random.Generator, n_boot: int
) -> CurveFit:
    curve, per_arm, shared = CURVES[model]
    weights = 1.0 / ladder.variances
    point, chi2 = curve(ladder.x, ladder.deltas, weights, new)
    replicates, _ = curve(ladder.x, bootstrap_deltas(ladder, rng, n_boot), weights, new)
    arms, scales = ladder.deltas.shape
    arm_dof = scales - per_arm - shared / arms
    pvalues = sps.chi2.sf(chi2, arm_dof) if arm_dof > 0 else np.ones(arms)
    kept = pvalues >= REJECT_LEVEL
    dof = kept.sum() * (scales - per_arm) - shared
    dispersion = max(1.0, float(chi2[kept].sum()) / dof) if dof > 0 else 1.0
    return CurveFit(
        model=model,
        point=point,
        draws=point + math.sqrt(dispersion) * (replicates - point),
        chi2=chi2,
        arm_dof=arm_dof,
        pvalues=pvalues,
        dispersion=dispersion,
    )
