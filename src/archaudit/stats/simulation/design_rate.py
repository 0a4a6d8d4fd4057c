"""The measured family-wise error rate and the MDE of a design: printed on every verdict table.

The rate is simulated under the null (`simulate_null`) with a fixed seed, so it is the same
number every time: under normal noise with one σ (the model the verdict arithmetic is exact for)
and under every model of the noise panel (stats/records/noise_panel.py), whose worst rate is
printed
beside it. It depends only on the design, so it is cached in-process and on disk under
`<archaudit cache>/stats/`, keyed by the design, the number of audits, the seed and the
simulation's version. A design too large to simulate within `DRAW_BUDGET` draws per noise model
(e.g. 1000 arms × 1000 seeds) is simulated with fewer audits, down to `MIN_AUDITS`; below that it
is not simulated and says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from archaudit.formatting import num
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.inference.distributions import solve_increasing
from archaudit.stats.records.noise_panel import CALIBRATION_PANEL, NORMAL, WIDEST_FACTOR, parse_one
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.simulation.calibrate import (
    calibration_audits,
    design_level,
    level_shares,
    unresolvable,
)
from archaudit.stats.simulation.design import AuditDesign
from archaudit.stats.simulation.disk_cache import cached, in_range
from archaudit.stats.simulation.null_kernel import (
    DRAW_BUDGET,
    MIN_AUDITS,
    affordable,
    draws_per_audit,
)
from archaudit.stats.simulation.power import (
    Design,
    DesignPower,
    default_baseline_seeds,
    power,
)
from archaudit.stats.simulation.simulate import (
    PanelRate,
    binomial_se,
    null_rates,
    panel_rate,
    worst,
)
from archaudit.stats.tests import statistical_test

DESIGN_AUDITS = 4000
"""Simulated audits per design under normal noise: a Monte-Carlo s.e. of 0.0034 at 0.05."""
PANEL_AUDITS = 2000
"""Simulated audits per design and panel model: an s.e. of 0.0049 at 0.05."""
DESIGN_SEED = 0
SIMULATION_VERSION = 6
"""Bump when the simulation's arithmetic changes, so that cached rates are recomputed."""


@dataclass(frozen=True)
class DesignRate(JsonResult):
    """How often this design declares a null arm significant, and what it can detect."""

    design: AuditDesign
    description: str
    fwer: float
    """Measured family-wise false-positive rate under normal noise with one σ (NaN: skipped)."""
    fwer_se: float
    audits: int
    seed: int
    above_alpha: bool
    """The normal-model or the panel's worst rate exceeds α by more than two MC s.e."""
    power_target: float
    mde_sigmas: float
    """Smallest true effect, in σ, that the design's smallest arm detects with `power_target`
    (∞: it can only be a candidate)."""
    panel_worst: PanelRate | None = None
    """The highest rate over the noise panel (None when skipped)."""
    skipped: str = ""
    """Why the rates were not simulated ("" when they were)."""
    level: float = math.nan
    """α′: the calibrated level corrected p-values are compared with
    (stats/simulation/calibrate.py); an
    audit whose own profile shows wider arms gets a lower one."""
    candidate_rate: float = math.nan
    """Share of null audits (normal noise) with >= 1 arm labelled candidate-*."""
    candidate_worst: PanelRate | None = None
    """The panel's highest false-candidate rate."""
    mdes: tuple[tuple[int, float], ...] = ()
    """(seeds, MDE in σ) for each seed count of the design's arms."""

    def describe_rates(self) -> str:
        """E.g. "normal noise 0.036 ± 0.003 (4000 null audits), worst over the noise panel and
        beyond it ... (hetero:6, 2000 audits each)": the panel and one arm 10–50× or the
        baseline 3–10× wide (`CALIBRATION_PANEL`, what α′ is calibrated over)."""
        if self.skipped:
            return f"error rate not simulated: {self.skipped}"
        text = f"normal noise {self.fwer:.3f} ± {self.fwer_se:.3f} ({self.audits} null audits)"
        worst_rate = self.panel_worst
        if worst_rate is not None:
            text += (
                f", worst over the noise panel and beyond it {worst_rate.fwer:.3f} ± "
                f"{worst_rate.fwer_se:.3f} "
                f"({worst_rate.noise}, {worst_rate.audits} audits each)"
            )
        uncorrected = " (uncorrected: --correction none)" * (self.design.correction == "none")
        flag = f" — ABOVE α{uncorrected}, verdicts do not hold" if self.above_alpha else ""
        return text + flag

    def describe_candidates(self) -> str:
        """The false-candidate rate, when the design has single-seed arms ("" otherwise)."""
        worst_rate = self.candidate_worst
        bounds = statistical_test(self.design.test).bounds_single_seeds
        if self.skipped or not bounds or worst_rate is None:
            return ""
        return (
            f"false candidates (null audits with >= 1 candidate-* arm, each a second seed to "
            f"run): normal noise {self.candidate_rate:.3f}, noise panel's worst "
            f"{worst_rate.fwer:.3f} ({worst_rate.noise})"
        )

    def describe_mdes(self, sigma: float | None = None) -> str:
        """E.g. "MDE 24.8 σ (1 seed), 51 σ (2 seeds) at 80% power", in metric units with σ."""
        parts = []
        for seeds, mde in self.mdes:
            units = f" = {num(mde * sigma)}" if sigma is not None and math.isfinite(mde) else ""
            value = f"{num(mde)} σ{units}" if math.isfinite(mde) else "none (candidates only)"
            parts.append(
                value + (f" ({seeds} seed{'s' * (seeds > 1)})" if len(self.mdes) > 1 else "")
            )
        return f"MDE {', '.join(parts)} at {self.power_target:.0%} power"


def design_rate(
    design: AuditDesign,
    *,
    power_target: float = 0.8,
    audits: int = DESIGN_AUDITS,
    seed: int = DESIGN_SEED,
) -> DesignRate:
    """The design's calibrated level, its measured family-wise error and false-candidate rates
    (normal and panel, cached) and its MDE per seed count."""
    enough = calibration_audits(design.alpha)  # small α needs more audits to be resolved
    normal_audits = affordable(design, max(audits, enough))
    each = affordable(design, max(PANEL_AUDITS, enough))
    level = design_level(design)
    mdes = tuple((n, arm_mde(design, n, power_target)) for n in sorted(set(design.arm_seeds)))
    unmeasured = DesignRate(
        design=design,
        description=design.describe(),
        fwer=math.nan,
        fwer_se=math.nan,
        audits=0,
        seed=seed,
        above_alpha=False,
        power_target=power_target,
        mde_sigmas=mdes[0][1],
        level=level,
        mdes=mdes,
    )
    if unresolvable(design):
        return replace(unmeasured, skipped=unresolvable(design))
    if normal_audits < MIN_AUDITS:
        reason = (
            f"{draws_per_audit(design):,} seed values per audit; fewer than {MIN_AUDITS} audits "
            f"fit the budget of {DRAW_BUDGET:,} draws"
        )
        return replace(unmeasured, skipped=reason)
    rates = _rates(design, normal_audits, each, seed)
    fwer, candidates = rates[NORMAL.spec]
    se = binomial_se(fwer, normal_audits)

    def per_model(which: int) -> tuple[PanelRate, ...]:
        models = CALIBRATION_PANEL
        sizes = {name: normal_audits if name == NORMAL.spec else each for name in models}
        return tuple(panel_rate(rates[n][which], sizes[n], design.alpha, n) for n in models)

    worst_rate = worst(per_model(0))
    return replace(
        unmeasured,
        fwer=fwer,
        fwer_se=se,
        audits=normal_audits,
        # `--correction none` too: uncorrected is a label, not a licence to print verdicts
        # whose family-wise rate is above α (19 × 3 measured 0.113)
        above_alpha=fwer > design.alpha + 2.0 * se or bool(worst_rate and worst_rate.above_alpha),
        panel_worst=worst_rate,
        candidate_rate=candidates,
        candidate_worst=worst(per_model(1)),
    )


@lru_cache(maxsize=256)
def arm_mde(
    design: AuditDesign,
    seeds: int,
    target: float = 0.8,
    level: float | None = None,
    bound: float = WIDEST_FACTOR,
) -> float:
    """The MDE (in σ) of an arm of `design` with `seeds` seeds, at the calibrated `level` (None:
    the design's own levels, averaged over how often each occurs: `level_shares`) and, for one
    seed, its σ bounded at `bound` (∞: a candidate at most, and so is every single seed of a
    design without multi-seed arms)."""
    bounds = statistical_test(design.test).bounds_single_seeds
    if seeds < 2 and bounds and max(design.arm_seeds) < 2:
        return math.inf
    shares = level_shares(design) if level is None else ((level, 1.0),)
    arms = [(design.arm(seeds, at, bound), share) for at, share in shares]
    try:
        return solve_increasing(
            lambda effect: sum(share * power(effect, arm) for arm, share in arms), target, tol=1e-5
        )
    except ArithmeticError:
        return math.inf


@lru_cache(maxsize=256)
def _rates(
    design: AuditDesign, audits: int, panel_audits: int, seed: int
) -> dict[str, tuple[float, float]]:
    """Noise model → (family-wise rate, false-candidate rate) of the whole calibrated procedure:
    "normal" at `audits`, the panel's at `panel_audits`."""
    fields = {
        "design": design.to_dict(),
        "audits": audits,
        "panel": [panel_audits, *CALIBRATION_PANEL],
        "seed": seed,
        "v": SIMULATION_VERSION,
    }

    def simulate() -> dict[str, tuple[float, float]]:
        return {
            name: null_rates(
                design, audits if name == NORMAL.spec else panel_audits, seed, parse_one(name)
            )
            for name in CALIBRATION_PANEL
        }

    def parse(stored: Any) -> dict[str, tuple[float, float]]:
        if sorted(stored) != sorted(CALIBRATION_PANEL):
            raise ValueError("not the panel's models")
        return {
            name: (in_range(a, 0.0, 1.0), in_range(b, 0.0, 1.0)) for name, (a, b) in stored.items()
        }

    return cached("design", fields, simulate, parse)


def design_power(
    seeds: int,
    n_arms: int,
    options: JudgeOptions = DEFAULT,
    *,
    baseline_seeds: int | None = None,
    effect: float | None = None,
    max_seeds: int = 1000,
) -> DesignPower:
    """The MDE of one of `n_arms` arms with `seeds` seeds, judged as `options` say, at the
    design's calibrated level α′ (what the verdict table's header states; the nominal level
    promised 10.3σ for 2 × 2 against 3, whose power there was 0.70). With `effect` (in σ), also
    the fewest seeds per arm that detect it at their own design's α′."""
    return DesignPower(
        design=Design.balanced(seeds, baseline_seeds, n_arms, options),
        target=options.power_target,
        mde_sigmas=_balanced_mde(seeds, n_arms, options, baseline_seeds),
        effect_sigmas=effect,
        seeds_needed=None
        if effect is None
        else _seeds_needed(effect, n_arms, options, baseline_seeds, max_seeds),
        max_seeds=max_seeds,
        level=design_level(_balanced(seeds, n_arms, options, baseline_seeds)),
    )


def _balanced(
    seeds: int, n_arms: int, options: JudgeOptions, baseline_seeds: int | None
) -> AuditDesign:
    base = baseline_seeds or default_baseline_seeds(seeds)
    return AuditDesign.judged_by(options, (seeds,) * n_arms, base)


def _balanced_mde(
    seeds: int, n_arms: int, options: JudgeOptions, baseline_seeds: int | None
) -> float:
    return arm_mde(_balanced(seeds, n_arms, options, baseline_seeds), seeds, options.power_target)


def _seeds_needed(
    effect: float, n_arms: int, options: JudgeOptions, baseline_seeds: int | None, cap: int
) -> int | None:
    """The fewest seeds per arm whose calibrated MDE is at most `effect` (the MDE falls as seeds
    grow: doubling, then bisection), or None past `cap`."""

    def detects(seeds: int) -> bool:
        return _balanced_mde(seeds, n_arms, options, baseline_seeds) <= effect

    high = 2
    while not detects(high):
        if high >= cap:
            return None
        high = min(2 * high, cap)
    low = 1
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if detects(middle) else (middle, high)
    return high
