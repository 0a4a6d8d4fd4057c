"""Multiple-testing corrections over the family of arms compared with one baseline."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from archaudit.errors import ConfigError, did_you_mean
from archaudit.names import Correction

CORRECTIONS = tuple(Correction)
"""`holm` (default: controls the family-wise error, never less powerful than Bonferroni),
`bonferroni` (the 2026 audit's choice), `dunnett` (many-to-one step-down on the shared-σ t: uses
the positive correlation through the shared baseline, so slightly more powerful than Holm; see
`archaudit.stats.inference.dunnett`), `bh` (Benjamini–Hochberg: controls the false discovery rate
instead), `none` (no correction; for comparison only)."""


FDR, FWER = "FDR", "FWER"
ERROR_RATES = {"bh": FDR}
"""What a correction controls (and so what a design's measured rate is called): the false
discovery rate for BH, the family-wise error rate for the others (`none` controls nothing; its
measured rate is still the family-wise one)."""
ERROR_RATE_NAMES = {FDR: "false discovery rate", FWER: "family-wise error rate"}
UNCALIBRATED = (Correction.BH, Correction.NONE)
"""Corrections whose level is not calibrated by simulation: under them no arm is declared an
improver or regressor (issue 53: BH printed improvers beside an FDR of 0.053, `none` a
regressor beside its own "ABOVE α"); their verdicts are nominal, with a note naming the arms."""


def declares(correction: str) -> bool:
    """Whether verdicts under `correction` may be improver/regressor (not `UNCALIBRATED`)."""
    return correction not in UNCALIBRATED


def error_rate(correction: str) -> str:
    """ "FDR" for BH, "FWER" otherwise: the error rate `correction` controls."""
    return ERROR_RATES.get(check_correction(correction), FWER)


def check_correction(method: str) -> str:
    """Return `method` if it is a known correction, else raise naming the closest one."""
    if method not in CORRECTIONS:
        raise ConfigError(f"unknown correction {method!r}" + did_you_mean(method, CORRECTIONS))
    return method


def adjust_pvalues(p: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """Adjusted p-values in the input order; reject arm i when p_adj[i] < α.

    `p` may be a batch of families, one per row: the correction runs along the last axis.
    Dunnett's correction needs the test statistics, not only p: see
    `archaudit.stats.inference.dunnett`.
    """
    check_correction(method)
    if method == "dunnett":
        raise ConfigError("the dunnett correction needs the test statistics; use judge()")
    p = np.asarray(p, dtype=float)
    m = p.shape[-1] if p.ndim else 0
    if m == 0 or method == "none":
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, m * p)
    if method == "bh" and p.ndim == 1:
        from scipy.stats import false_discovery_control  # scipy.stats costs ~0.7 s to import

        return false_discovery_control(p, method="bh")
    # Own code for Holm and for batches: the simulations correct millions of families at once
    # (one row each), and statsmodels, whose `multipletests` the tests compare with, is not a
    # runtime dependency.
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    if method == "holm":
        # Step-down: the i-th smallest p (0-based) is tested at α/(m − i); keep monotone.
        stepped = np.maximum.accumulate((m - np.arange(m)) * ranked, axis=-1)
    else:
        # BH step-up: the i-th smallest p (1-based) is tested at i·α/m; monotone from the top.
        flipped = (m / np.arange(m, 0, -1)) * ranked[..., ::-1]
        stepped = np.minimum.accumulate(flipped, axis=-1)[..., ::-1]
    adjusted = np.empty_like(p)
    np.put_along_axis(adjusted, order, np.minimum(1.0, stepped), axis=-1)
    return adjusted


def per_test_alpha(alpha: float, m: int, method: str) -> float:
    """The level one test must meet on its own: α/m for the corrections, α without one.

    For Holm and BH this is the threshold of the most significant arm, so power computed with it
    is a lower bound (exact for Bonferroni).
    """
    return alpha if method == "none" else alpha / max(m, 1)


def fwer_uncorrected(alpha: float, m: int) -> float:
    """The family-wise error rate of m independent uncorrected tests: 1 − (1 − α)^m."""
    return 1.0 - (1.0 - alpha) ** m
