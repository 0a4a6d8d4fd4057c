"""Seeds far outside the rest: the heavy tails a verdict table must show, not hide.

A seed is flagged when it lies more than `OUTLIER_MADS` robust standard deviations from the
median of its arm's seeds (with three or more, one wild seed cannot move it), the robust σ
being 1.4826 × the median absolute deviation of every seed of the family from its own arm's
median (the family's seeds, not the arm's two or three, so one wild seed cannot hide itself by
inflating its own scale). Arms need >= 3 seeds:
with two, either could be the odd one. The flag is a warning for the reader; the tests are left
as they are (their error rate is measured over the noise panel, heavy tails included).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

OUTLIER_MADS = 5.0
"""k: robust standard deviations from the rest beyond which a seed is flagged."""
MAD_TO_SIGMA = 1.4826
"""MAD × this estimates σ for normal noise."""


@dataclass(frozen=True)
class OutlierSeed:
    seed: int
    value: float
    distance: float
    """|value − median of the arm's seeds| in robust σ of the family."""


def family_scale(groups: Sequence[np.ndarray]) -> float:
    """1.4826 × the median absolute deviation of every value from its group's median (groups
    with >= 2 values); NaN when there are none."""
    residuals = [np.abs(g - np.median(g)) for g in groups if len(g) >= 2]
    return MAD_TO_SIGMA * float(np.median(np.concatenate(residuals))) if residuals else np.nan


def outlier_seeds(
    values: np.ndarray, seeds: Sequence[int], scale: float, k: float = OUTLIER_MADS
) -> tuple[OutlierSeed, ...]:
    """The seeds of one arm beyond k robust σ (`scale`) from the arm's median."""
    if len(values) < 3 or not scale > 0:
        return ()
    centre = float(np.median(values))
    distances = np.abs(np.asarray(values, dtype=float) - centre) / scale
    return tuple(
        OutlierSeed(int(seed), float(value), float(distance))
        for seed, value, distance in zip(seeds, values, distances, strict=True)
        if distance > k
    )
