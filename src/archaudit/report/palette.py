"""One colour per arm for the whole report: assigned once, in the order the results list the
arms, and used by every figure, every legend and the colour key of the HTML page and its
Markdown twin, so that blue means the same arm everywhere.

Red is kept out of the arms' colours (it marks divergence) and grey too (the noise band); the
baseline is black.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Colour:
    name: str
    """Said in words where a figure cannot show it (the Markdown colour key)."""
    hex: str


BASELINE_COLOUR = Colour("black", "#222222")
DIVERGED_COLOUR = Colour("red", "#d62728")
ARM_COLOURS = (
    Colour("blue", "#1f77b4"),
    Colour("orange", "#ff7f0e"),
    Colour("green", "#2ca02c"),
    Colour("purple", "#9467bd"),
    Colour("brown", "#8c564b"),
    Colour("pink", "#e377c2"),
    Colour("olive", "#bcbd22"),
    Colour("cyan", "#17becf"),
    Colour("light blue", "#aec7e8"),
    Colour("light orange", "#ffbb78"),
    Colour("light green", "#98df8a"),
    Colour("light purple", "#c5b0d5"),
    Colour("light brown", "#c49c94"),
    Colour("light pink", "#f7b6d2"),
    Colour("light olive", "#dbdb8d"),
    Colour("light cyan", "#9edae5"),
)
"""tab10 then tab20's light shades, without red and grey; more arms than this cycle."""


def arm_colours(arms: Sequence[str], baseline: str) -> dict[str, Colour]:
    """Arm → its colour, the baseline black, the others in order of first appearance."""
    others = [arm for arm in dict.fromkeys(arms) if arm != baseline]
    colours = {arm: ARM_COLOURS[i % len(ARM_COLOURS)] for i, arm in enumerate(others)}
    return {baseline: BASELINE_COLOUR, **colours}


def arm_gid(arm: str, *parts: str) -> str:
    """The SVG group id of an arm's mark: figures tag each one, so that a reader of the SVG
    (a test, a script) can tell which arm it belongs to."""
    return "--".join(("arm", arm, *parts))
