"""How often "the stack beats the single-scale baseline" held at the target on ladders of known
truth, by how far the target lies beyond the largest trained scale (`claim_rates.toml`, written
by `benchmarks/predict_coverage.py --claim-rates`, never by hand).

The claim is printed only at a distance where it was measured and held at least MIN_RATE of the
time, and its sentence states that measured rate (issue 55: a rate printed for every distance,
86%, was 69% at 16×).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from archaudit.stats.records.serialize import JsonResult

RATES_FILE = Path(__file__).with_name("claim_rates.toml")
MIN_RATE = 0.8
"""The claim is printed only where it held at least this often at the target's distance."""


@dataclass(frozen=True)
class ClaimRate(JsonResult):
    """The claim at targets up to `factor` × the largest trained scale (beyond the previous
    measured factor)."""

    factor: float
    claimed: int
    """Known-truth ladders where it was claimed at that distance."""
    held: int
    """... and the stack was truly closer to the truth at the target."""

    @property
    def rate(self) -> float:
        return self.held / self.claimed if self.claimed else math.nan

    def sentence(self) -> str:
        return (
            f"on known-truth ladders such a claim held at the target in {self.rate:.0%} of "
            f"{self.claimed} ladders at {self.factor:g}× the largest scale"
        )


@cache
def measured_rates() -> tuple[ClaimRate, ...]:
    """The rates of `claim_rates.toml`, by distance."""
    table = tomllib.loads(RATES_FILE.read_text())
    rates = (
        ClaimRate(float(r["factor"]), int(r["claimed"]), int(r["held"])) for r in table["distance"]
    )
    return tuple(sorted(rates, key=lambda r: r.factor))


def claim_rate(factor: float) -> ClaimRate | None:
    """The rate measured at the nearest distance at or beyond `factor` (None beyond every one
    measured: nothing says how the claim fares there)."""
    return next((r for r in measured_rates() if factor <= r.factor * (1.0 + 1e-9)), None)


def may_claim(factor: float) -> bool:
    """Whether the claim held at least MIN_RATE of the time at this target's distance."""
    rate = claim_rate(factor)
    return rate is not None and rate.claimed > 0 and rate.rate >= MIN_RATE
