"""A ladder: the trained scales of one recipe and the untrained target they point to.

Its scales must lie on one line in (log parameters, log tokens): tokens grow with parameters as
the audit states (a fixed number per parameter, a fixed budget, or any power of N), so that one
coordinate, log N, places every scale and the target on it. The extrapolation (`predict`) is
only as good as that line.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from archaudit.errors import ConfigError
from archaudit.stats.serialize import JsonResult

LINE_TOLERANCE = 1.25
"""A scale (or the target) is on the ladder's line when its tokens are within this factor of
the line through the other scales."""


@dataclass(frozen=True)
class LadderScale(JsonResult):
    name: str
    params: float
    tokens: float


@dataclass(frozen=True)
class Ladder(JsonResult):
    scales: tuple[LadderScale, ...]
    """The trained scales, from the fewest parameters to the most."""
    target: LadderScale


def line_tokens(scales: tuple[LadderScale, ...], params: float) -> float:
    """Tokens at `params` on the least-squares line through the scales' (log N, log D)."""
    x = np.log([s.params for s in scales])
    y = np.log([s.tokens for s in scales])
    if len(scales) < 2 or np.ptp(x) == 0:
        return float(math.exp(y.mean()))
    slope, intercept = np.polyfit(x, y, 1)
    return float(math.exp(intercept + slope * math.log(params)))


def check_ladder(ladder: Ladder) -> None:
    """Parameters grow along the ladder, tokens with them on one line, the target beyond."""
    scales = ladder.scales
    for low, high in itertools.pairwise(scales):
        if high.params <= low.params:
            raise ConfigError(
                f"ladder: scale {high.name!r} ({high.params:,.0f} parameters) must have more "
                f"parameters than {low.name!r} ({low.params:,.0f}): order the scales by size"
            )
        if high.tokens < low.tokens:
            raise ConfigError(
                f"ladder: scale {high.name!r} trains fewer tokens ({high.tokens:,.0f}) than the "
                f"smaller {low.name!r} ({low.tokens:,.0f}); tokens must grow with parameters"
            )
    for i, scale in enumerate(scales if len(scales) >= 3 else ()):
        _on_line(scale, scales[:i] + scales[i + 1 :], f"scale {scale.name!r}")
    target = ladder.target
    if scales and target.params <= scales[-1].params:
        raise ConfigError(
            f"target {target.name!r} ({target.params:,.0f} parameters) is no larger than the "
            f"largest trained scale {scales[-1].name!r} ({scales[-1].params:,.0f}): judge the "
            "trained scale itself (stats judge --scale)"
        )
    if scales:
        _on_line(target, scales, f"target {target.name!r}")


def _on_line(scale: LadderScale, others: tuple[LadderScale, ...], what: str) -> None:
    expected = line_tokens(others, scale.params)
    if max(scale.tokens / expected, expected / scale.tokens) > LINE_TOLERANCE:
        raise ConfigError(
            f"ladder: {what} trains {scale.tokens:,.0f} tokens, {scale.tokens / expected:.2f}× "
            f"the {expected:,.0f} the other scales' tokens-per-parameter line gives: the scales "
            "must lie on one line in (log parameters, log tokens); change its tokens"
        )
