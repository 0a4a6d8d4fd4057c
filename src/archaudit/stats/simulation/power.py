"""Power of the verdict rule, the minimum detectable effect (MDE) and the seeds a claim needs.

Effects are in units of the true seed standard deviation σ. The formula models exactly what
`judge` does to an arm with `arm_seeds` seeds against a baseline with `baseline_seeds` seeds,
when seeds are normal with a common σ: an arm is declared an improver/regressor when

- pooled-t (the calibrated default with shared σ; the prediction-interval t for one seed):
  |Δ| >= max(t_ν·a, 2)·σ̂, a = √(1/n_a + 1/n_b), t_ν the two-sided t quantile at the per-test
  level with the noise floor's ν degrees of freedom and σ̂² ~ σ²·χ²_ν/ν: the noncentral-t tail
  P(|T'| >= max(t_ν, 2/a)), T' ~ t'(ν, effect/a);
- robust, single-seed arm: the pooled-t rule with a = √(6² + 1/n_b) in the threshold (the arm's
  seed σ bounded at the noise panel's widest) while Δ still spreads as √(1 + 1/n_b)·σ;
- z (paper mode): |Δ| >= max(c, 2)·σ̂, c the two-sided normal quantile;
- moderated Welch (every arm with several seeds): |Δ| >= max(t(ν̂)·SE, 2·σ̂),
  SE² = s̃_a²/n_a + s̃_b²/n_b with each side's variance moderated toward the other groups'
  pooled σ̂² with its own prior weight (family_test.moderated_welch, the same function), ν̂ the
  Welch–Satterthwaite df on the moderated df;
- plain Welch (a multi-seed arm of a `robust` family): |Δ| >= max(t(ν̂)·SE, 2·s_b),
  SE² = s_a²/n_a + s_b²/n_b, s_b the baseline's own seed SD;

where Δ ~ N(effect, a²) is independent of the variance estimates. The pooled-t and z rules are
noncentral-t tails (scipy.stats.nct), exactly. For Welch, conditional on the variances the
rejection probability is two normal tails; the expectation over the three χ² sums of squares
(the arm's, the baseline's, the rest of σ's) is taken by Gauss–Legendre quadrature. Each
rule is its test's power kernel (`StatTest.power`, one file per test in
stats/tests/); `power` looks it up. The per-test level is α/m for every correction
(exact for Bonferroni, a lower bound on power for Holm, Dunnett and BH) and α without one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from archaudit.errors import ConfigError
from archaudit.stats.choices.options import DEFAULT, JudgeOptions, check_test
from archaudit.stats.inference.corrections import per_test_alpha
from archaudit.stats.inference.distributions import solve_increasing
from archaudit.stats.inference.family_test import choose_test
from archaudit.stats.records.noise_panel import WIDEST_FACTOR
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.tests import statistical_test

CURVE_STEP, CURVE_SPAN = 0.5, 15.0
"""A power curve is computed every CURVE_STEP σ up to CURVE_SPAN σ, or past the MDE."""


@dataclass(frozen=True, slots=True)
class Design:
    """How one arm is compared with the baseline inside a family of `arms` comparisons."""

    arm_seeds: int
    baseline_seeds: int
    n_arms: int = 1
    """m, the number of arms in the corrected family."""
    alpha: float = 0.05
    correction: str = "holm"
    sigma_dof: int | None = None
    """Degrees of freedom of the noise floor. None pools the baseline and the m arms:
    (baseline_seeds − 1) + m·(arm_seeds − 1)."""
    family_test: str | None = None
    """The family's test, a registered name (stats/tests/). None chooses it from this
    arm's seeds."""
    reference: str = "t"
    """"t" (calibrated) or "normal" (paper mode), used when `family_test` is None."""
    single_bound: float = WIDEST_FACTOR
    """The factor a single seed's σ is bounded by in the robust test
    (stats/simulation/profile.py)."""

    def __post_init__(self) -> None:
        check_test(self.reference, self.correction, self.alpha)
        if self.arm_seeds < 1 or self.baseline_seeds < 2 or self.n_arms < 1:
            raise ConfigError(
                f"a design needs >= 1 seed per arm, >= 2 baseline seeds and >= 1 arm; got "
                f"{self.arm_seeds}, {self.baseline_seeds} and {self.n_arms}"
            )

    @classmethod
    def balanced(
        cls,
        seeds: int,
        baseline_seeds: int | None = None,
        n_arms: int = 1,
        options: JudgeOptions = DEFAULT,
    ) -> Design:
        """One of `n_arms` arms with `seeds` seeds each, judged as `options` say. The baseline
        runs `baseline_seeds`, by default as many as each arm, at least 3 (the noise floor)."""
        return cls(
            arm_seeds=seeds,
            baseline_seeds=baseline_seeds or default_baseline_seeds(seeds),
            n_arms=n_arms,
            alpha=options.alpha,
            correction=options.correction,
            reference=options.reference,
        )

    @property
    def level(self) -> float:
        return per_test_alpha(self.alpha, self.n_arms, self.correction)

    @property
    def test(self) -> str:
        return self.family_test or choose_test(
            (self.arm_seeds,), reference=self.reference, correction=self.correction
        )

    @property
    def dof(self) -> int:
        if self.sigma_dof is not None:
            return self.sigma_dof
        return self.baseline_seeds - 1 + self.n_arms * (self.arm_seeds - 1)


def power(effect: float, design: Design) -> float:
    """P(the arm is declared an improver or regressor) when its true effect is `effect`·σ: the
    power kernel of the design's registered test (`StatTest.power`)."""
    return statistical_test(design.test).power(effect, design)


def minimum_detectable_effect(design: Design, target: float = 0.8) -> float:
    """The smallest true effect (in σ) declared significant with probability `target`."""
    return solve_increasing(lambda effect: power(effect, design), target, tol=1e-5)


@dataclass(frozen=True)
class PowerCurve(JsonResult):
    """P(verdict) against the true effect (σ) of one family's design, with the MDE on it: the
    figure's curve, its MDE line and the MDE in a table all come from this one record."""

    method: str
    """How the probabilities were computed, for the figure to say."""
    target: float
    mde_sigmas: float | None
    """The effect where the curve reaches `target` (None: not within the computed span)."""
    points: tuple[tuple[float, float], ...]
    """(effect in σ, probability), increasing in effect. The MDE is one of the points."""


def power_curve(
    designs: Sequence[Design],
    target: float = 0.8,
    *,
    step: float = CURVE_STEP,
    span: float = CURVE_SPAN,
    shares: Sequence[float] = (),
) -> PowerCurve:
    """The family's power: the expected share of its arms given a verdict when every arm's true
    effect is x·σ, each arm with its own seeds (`designs`, one per tested arm, so a family that
    mixes 2- and 3-seed arms is averaged as it ran), each weighted by its `shares` entry (by
    default 1: a design at each of the levels its audits get, `level_shares`, is one arm's
    share of it)."""
    weights: dict[Design, float] = {}
    for design, share in zip(designs, shares or [1.0] * len(designs), strict=True):
        weights[design] = weights.get(design, 0.0) + share
    total = sum(weights.values())

    def family_power(effect: float) -> float:
        return sum(n * power(effect, d) for d, n in weights.items()) / total

    mde = curve_mde(family_power, target)
    return curve_points(family_power, target, mde, _method(weights), step=step, span=span)


def curve_mde(probability: Callable[[float], float], target: float) -> float | None:
    """Where an increasing power function reaches `target` (None when it never does)."""
    try:
        return solve_increasing(probability, target, tol=1e-5)
    except ArithmeticError:
        return None


def curve_points(
    probability: Callable[[float], float],
    target: float,
    mde: float | None,
    method: str,
    *,
    step: float = CURVE_STEP,
    span: float = CURVE_SPAN,
) -> PowerCurve:
    """The curve on a grid to `span` (or 1.3 × the MDE), the MDE included as a point."""
    top = max(span, 1.3 * mde) if mde is not None else span
    grid = [i * step for i in range(math.ceil(top / step) + 1)]
    effects = sorted({*grid, *([mde] if mde is not None else [])})
    points = tuple((x, probability(x)) for x in effects)
    return PowerCurve(method=method, target=target, mde_sigmas=mde, points=points)


def _method(weights: Mapping[Design, float]) -> str:
    first = next(iter(weights))
    seeds = sorted({d.arm_seeds for d in weights})
    arms = "/".join(map(str, seeds))
    return (
        f"fixed design, computed: {first.test} test, {first.correction} over {first.n_arms} "
        f"arm(s) of {arms} seed(s), {first.baseline_seeds} baseline seeds"
    )


def seeds_needed(
    effect: float,
    options: JudgeOptions = DEFAULT,
    *,
    n_arms: int = 1,
    baseline_seeds: int | None = None,
    max_seeds: int = 1000,
) -> int | None:
    """The fewest seeds per arm that detect `effect`·σ with probability `options.power_target`,
    in a family of `n_arms` arms judged as `options` say.

    `baseline_seeds=None` means the baseline runs as many seeds as each arm (at least 3).
    None when even `max_seeds` is not enough. Effects under 2σ are within noise by rule, so
    they are never declared, however many seeds run.
    """

    def reaches(k: int) -> bool:
        design = Design.balanced(k, baseline_seeds, n_arms, options)
        return power(effect, design) >= options.power_target

    # k = 1 is judged against the 6σ bound and k >= 2 by Welch, so power need not grow from
    # k = 1 to 2; from k = 2 on it does, and bisection is safe.
    if baseline_seeds is not None and reaches(1):
        return 1
    if not reaches(max_seeds):
        return None
    lo, hi = 1, max_seeds
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reaches(mid) else (mid, hi)
    return hi


@dataclass(frozen=True)
class DesignPower(JsonResult):
    """What a balanced design can detect, and the seeds per arm a given effect needs."""

    design: Design
    target: float
    """The power at which the MDE is quoted and `seeds_needed` is counted."""
    mde_sigmas: float
    effect_sigmas: float | None = None
    seeds_needed: int | None = None
    """Seeds per arm that detect `effect_sigmas` (None: none asked, or more than `max_seeds`)."""
    max_seeds: int = 1000
    level: float | None = None
    """The calibrated per-design level α′ the MDE is quoted at (None: the nominal α)."""


def default_baseline_seeds(arm_seeds: int) -> int:
    """Baseline seeds when none are given: as many as each arm runs, at least 3 (PROTOCOL R5)."""
    return max(arm_seeds, 3)
