"""Seeds far outside the rest: the heavy tails a verdict table must show, not hide.

A seed is flagged when it lies more than `OUTLIER_MADS` robust standard deviations from the
median of its arm's seeds (with three or more, one wild seed cannot move it), the robust σ
being the median of every within-arm difference of two seeds over √2·Φ⁻¹(0.75) (the family's
seeds, not the arm's two or three, so one wild seed cannot hide itself by inflating its own
scale). Not the median absolute deviation from each arm's median: with three seeds the median
seed's own deviation is 0, a third of the deviations are, and the scale came out so small that
the note fired on 67% of 19 × 3 tables of pure normal noise (the pairwise scale: 0.4%,
benchmarks/heavy_tail_note.py). Arms need >= 3 seeds:
with two, either could be the odd one. The flag is a warning for the reader; the tests are left
as they are (their error rate is measured over the noise panel, heavy tails included).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

OUTLIER_MADS = 5.0
"""k: robust standard deviations from the rest beyond which a seed is flagged."""
PAIR_TO_SIGMA = 1.0 / (math.sqrt(2.0) * float(ndtri(0.75)))
"""The median |x − y| of two normal seeds × this estimates σ (x − y has σ√2)."""


@dataclass(frozen=True)
class OutlierSeed:
    seed: int
    value: float
    distance: float
    """|value − median of the arm's seeds| in robust σ of the family."""


def family_scale(groups: Sequence[np.ndarray]) -> float:
    """The robust σ of a family: `PAIR_TO_SIGMA` × the median |difference| of two values of
    one group, over every pair within every group (groups with >= 2 values); NaN without."""
    pairs = [
        np.abs(np.subtract.outer(g, g)[np.triu_indices(len(g), 1)]) for g in groups if len(g) >= 2
    ]
    return PAIR_TO_SIGMA * float(np.median(np.concatenate(pairs))) if pairs else np.nan


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
