"""A ladder: the trained scales of one recipe and the untrained target they point to.

Its scales must lie on one line in (log parameters, log tokens): tokens grow with parameters as
the audit states (a fixed number per parameter, a fixed budget, or any power of N), so that one
coordinate, log N, places every scale and the target on it. The extrapolation (`predict`) is
only as good as that line.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

import numpy as np

from archaudit.errors import ConfigError
from archaudit.stats.records.serialize import JsonResult

SI_SUFFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
"""What a size's suffix multiplies it by (the names scales and targets go by: 64M, 1.2B)."""
_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*", re.IGNORECASE)

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


def parse_size(text: str) -> float | None:
    """A count written as a number (1.2e9) or with an SI suffix (64M, 1.2B, 500k); None when
    `text` is neither."""
    match = _SIZE.fullmatch(text)
    if match is None:
        return None
    return float(match.group(1)) * SI_SUFFIXES[match.group(2).lower()]


def si_size(count: float) -> str:
    """A count as the tables name scales: 64M, 1.2B (three significant digits at most)."""
    for suffix, factor in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if count >= factor:
            return f"{count / factor:.3g}{suffix}"
    return f"{count:.3g}"


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
    off = [i for i, s in enumerate(scales) if len(scales) >= 3 and not _fits(s, _others(scales, i))]
    if off:
        blamed = off_line(scales, off)
        _on_line(scales[blamed], _others(scales, blamed), f"scale {scales[blamed].name!r}")
    target = ladder.target
    if scales and target.params <= scales[-1].params:
        raise ConfigError(
            f"target {target.name!r} ({target.params:,.0f} parameters) is no larger than the "
            f"largest trained scale {scales[-1].name!r} ({scales[-1].params:,.0f}): judge the "
            "trained scale itself (stats judge --scale)"
        )
    if scales:
        _on_line(target, scales, f"target {target.name!r}")


def off_line(scales: tuple[LadderScale, ...], suspects: list[int]) -> int:
    """Of the `suspects`, the scale most off the tokens-per-parameter line: the one without
    which the others lie closest to a line (then the largest departure from the line through
    the others, then the larger scale, break ties: with 3 scales every pair lies on a line). A
    scale far off tilts the line through the others, so its neighbours depart from that line
    too; without it, the rest lie on theirs."""
    x = np.log([s.params for s in scales])
    y = np.log([s.tokens for s in scales])

    def key(i: int) -> tuple[float, float, int]:
        keep = np.arange(len(scales)) != i
        fit = np.polyfit(x[keep], y[keep], 1)
        rest = float(np.sum((y[keep] - np.polyval(fit, x[keep])) ** 2))
        return (round(rest, 12), -abs(float(y[i] - np.polyval(fit, x[i]))), -i)

    return min(suspects, key=key)


def _others(scales: tuple[LadderScale, ...], i: int) -> tuple[LadderScale, ...]:
    return scales[:i] + scales[i + 1 :]


def _fits(scale: LadderScale, others: tuple[LadderScale, ...]) -> bool:
    expected = line_tokens(others, scale.params)
    return max(scale.tokens / expected, expected / scale.tokens) <= LINE_TOLERANCE


def _on_line(scale: LadderScale, others: tuple[LadderScale, ...], what: str) -> None:
    if not _fits(scale, others):
        expected = line_tokens(others, scale.params)
        raise ConfigError(
            f"ladder: {what} trains {scale.tokens:,.0f} tokens, {scale.tokens / expected:.2f}× "
            f"the {expected:,.0f} the other scales' tokens-per-parameter line gives: the scales "
            "must lie on one line in (log parameters, log tokens); change its tokens"
        )
