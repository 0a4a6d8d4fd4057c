"""Sequential audits: add seeds after looking at the data, with the family-wise error controlled.

The method is a group-sequential design per arm combined with Holm across arms:

- **Per arm, alpha spending** (Lan & DeMets 1983, Biometrika 70:659): arm i is looked at each
  time it has received a new seed, at information fraction t = n/N (n its seeds, N the most it may
  get). The two-sided O'Brien–Fleming-type spending function α(t) = 2 − 2Φ(z_{1−α/2}/√t) spends
  almost nothing early, so the last look's boundary is close to the fixed design's. Boundaries
  come from the canonical joint distribution of the sequence of z statistics by the recursive
  numerical integration of Armitage, McPherson & Rowe (1969) (Jennison & Turnbull 2000, ch. 19),
  and are applied to the calibrated t test as nominal p-value thresholds (the "significance level
  approach", Jennison & Turnbull 2000, §3.8).
- **Across arms, Holm** as a graphical sequentially rejective procedure (Maurer & Bretz 2013,
  Stat. Biopharm. Res. 5:311; Ye, Li, Liu & Yao 2013, Stat. Med. 32:1112): every open arm is
  tested at level α/(m − r), r the arms already rejected at any look; a rejection raises the level
  of the others, which are re-tested at the same look.
- **Futility is non-binding**: an arm stops when its predictive power (Spiegelhalter, Freedman &
  Blackburn 1986) to cross its final boundary is below `futility` (from its second seed on), or
  at its last look.
  Stopping an arm never rejects it, so futility cannot raise the error rate; it only costs power,
  which `simulate_sequential` measures next to the fixed design's.

The test is the robust default of docs/verdicts.md, measured over the noise panel
(stats/records/noise_panel.py): an arm with >= 2 seeds is tested by Welch's t of its own seeds
against
the baseline's (its own variance enters its test); an arm with one seed cannot show its spread,
so its p is that of the prediction-interval t with its seed σ bounded at 6× the pooled σ, and it
is never declared before a **confirmation seed** (`CONFIRMATION_SEEDS`): a first-round arm that
looks significant is a candidate that gets its second seed. σ, pooled over the baseline and every
arm with >= 2 seeds (Σ(nᵢ − 1) degrees of freedom), scales the within-noise rule (an arm is
declared only when |Δ| >= 2σ) and the futility and next-seed predictions. The error rate of the
whole closed loop (looks, Holm, futility, the schedule) is measured by `simulate_sequential`
under every model of the noise panel rather than assumed.

Everything is vectorised over a leading batch axis (simulated audits); a real audit is a batch of
one, so the audit loop and the simulation run exactly the same code.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import optimize, stats

from archaudit.errors import ConfigError
from archaudit.names import Test
from archaudit.stats.inference.family_test import interval
from archaudit.stats.records.noise_panel import PANEL, NoiseModel, parse_one
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.verdicts import NOISE_SIGMAS, Verdict
from archaudit.stats.simulation.disk_cache import cached, in_range
from archaudit.stats.simulation.power import PowerCurve, curve_points
from archaudit.stats.simulation.profile import NO_PROFILE, Profile, profile_levels, ratio_bounds
from archaudit.stats.simulation.simulate import PanelRate, panel_rate, worst
from archaudit.stats.simulation.simulation_checks import sequential_models
from archaudit.stats.tests import Spread, statistical_test


class LoopState(IntEnum):
    """Per-arm state of a sequential family, held as its integer in the loop's state arrays;
    IMPROVER and REGRESSOR are settled and final."""

    OPEN = 0
    IMPROVER = 1
    REGRESSOR = 2
    FUTILE = 3

    @property
    def label(self) -> str:
        """Its name in a record (`stop_reasons`): "open", "improver", "regressor", "futile"."""
        return self.name.lower()

    @property
    def verdict(self) -> Verdict | None:
        """The verdict a settled arm has (None: not settled)."""
        return SETTLED_VERDICTS.get(self)


SETTLED_VERDICTS = {LoopState.IMPROVER: Verdict.IMPROVER, LoopState.REGRESSOR: Verdict.REGRESSOR}
"""The loop's settled states, each with its verdict: the one bridge between the two words."""
_GRID = 401
NORMAL_SPEC = "normal"
"""Points of the numerical integration over the continuation region."""


@dataclass(frozen=True, kw_only=True)
class SequentialRule:
    """The stopping rule of a sequential family of arms compared with one baseline."""

    alpha: float = 0.05
    max_seeds: int = 5
    """N: the most seeds one arm may get (its last look)."""
    baseline_seeds: int = 3
    """Baseline seeds before the first look."""
    baseline_max: int = 0
    """The most baseline seeds (0 = max(max_seeds, baseline_seeds)); the baseline gets one more
    seed per round while any arm is open."""
    futility: float = 0.1
    """Stop an arm when its predictive power to cross its last boundary is below this; 0 turns
    futility stopping off."""
    futility_from: int = 2
    """No futility stop before an arm has this many seeds: at the first look σ rests on the
    baseline's few seeds alone, and a 3σ arm looks small too often."""
    calibrated: bool = False
    """Spend the loop's calibrated level (`loop_level`: ≤ α, set by simulating this exact loop
    over the noise panel) instead of α itself; what `run --until-settled` uses."""

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0 or not 0.0 <= self.futility < 1.0:
            raise ConfigError(f"alpha {self.alpha} and futility {self.futility} must be in (0, 1)")
        if self.max_seeds < 1 or self.baseline_seeds < 2:
            raise ConfigError(
                f"a sequential design needs max_seeds >= 1 and >= 2 baseline seeds; got "
                f"{self.max_seeds} and {self.baseline_seeds}"
            )

    @property
    def baseline_cap(self) -> int:
        return self.baseline_max or max(self.max_seeds, self.baseline_seeds)


# ---------------------------------------------------------------------------------------------
# boundaries


def obf_spending(t: float | np.ndarray, alpha: float) -> float | np.ndarray:
    """Lan–DeMets O'Brien–Fleming-type two-sided spending: α(t) = 2 − 2Φ(z_{1−α/2}/√t)."""
    return 2.0 * stats.norm.sf(stats.norm.isf(alpha / 2.0) / np.sqrt(t))


@lru_cache(maxsize=256)
def nominal_levels(alpha: float, looks: int) -> tuple[float, ...]:
    """Two-sided nominal p thresholds at looks n = 1..`looks` (t = n/looks) that spend exactly
    `alpha` under the canonical joint distribution of the z statistics."""
    times = np.arange(1, looks + 1) / looks
    spent = np.asarray(obf_spending(times, alpha))
    bounds = [float(stats.norm.isf(spent[0] / 2.0))]
    # density of the score S = Test.Z·√t on a grid of the continuation region after look 1
    grid = np.linspace(-bounds[0], bounds[0], _GRID) * math.sqrt(times[0])
    density = stats.norm.pdf(grid, scale=math.sqrt(times[0]))
    for k in range(1, looks):
        step = math.sqrt(times[k] - times[k - 1])
        weights = density * _trapezoid_weights(grid)
        edge = math.sqrt(times[k])
        args = (edge, grid, step, weights, spent[k] - spent[k - 1])
        b = optimize.brentq(_excess_exit, 0.1, 60.0, args=args, xtol=1e-10)
        bounds.append(b)
        new_grid = np.linspace(-b, b, _GRID) * math.sqrt(times[k])
        gap = (new_grid[:, None] - grid[None, :]) / step
        kernel = np.exp(-0.5 * gap**2) / (step * math.sqrt(2.0 * math.pi))
        grid, density = new_grid, kernel @ weights
    return tuple(float(2.0 * stats.norm.sf(b)) for b in bounds)


def _excess_exit(
    b: float, edge: float, grid: np.ndarray, step: float, weights: np.ndarray, target: float
) -> float:
    """P(the score leaves ±b·√t at this look, having stayed inside before) − what to spend."""
    crossing = stats.norm.sf((b * edge - grid) / step) + stats.norm.cdf((-b * edge - grid) / step)
    return float(weights @ crossing) - target


def _trapezoid_weights(grid: np.ndarray) -> np.ndarray:
    weights = np.full(len(grid), grid[1] - grid[0])
    weights[[0, -1]] /= 2.0
    return weights


@lru_cache(maxsize=64)
def holm_boundaries(alpha: float, arms: int, looks: int) -> np.ndarray:
    """Row r: the nominal thresholds per look at Holm's level α/(arms − r)."""
    return np.array([nominal_levels(alpha / (arms - r), looks) for r in range(arms)])


def row_boundaries(rule: SequentialRule, tests: ArmTests) -> np.ndarray:
    """(B, m, looks) `holm_boundaries` of each audit of the batch at its own level
    (`look_levels`: the loop's calibrated level with the profile its seeds show)."""
    levels = look_levels(rule, tests)
    arms = tests.delta.shape[1]
    out = np.empty((len(levels), arms, rule.max_seeds))
    for level in np.unique(levels):
        out[levels == level] = holm_boundaries(float(level), arms, rule.max_seeds)
    return out


def look_levels(rule: SequentialRule, tests: ArmTests) -> np.ndarray:
    """(B,) the level each audit's boundaries spend at this look: α for an uncalibrated rule;
    for a calibrated one the loop's level over the panel, lowered, as a fixed design's α′ is,
    to the level of the profile model its multi-seed arms' ratio bounds show
    (stats/simulation/profile.py)."""
    arms = tests.delta.shape[1]
    if not rule.calibrated:
        return np.full(len(tests.delta), rule.alpha)
    return profile_levels(
        tests.ratio, loop_level(arms, rule), lambda profile: loop_level(arms, rule, profile)
    )


def spent_level(rule: SequentialRule, arms: int, profile: Profile = NO_PROFILE) -> float:
    """The level the rule's boundaries spend for an audit showing `profile`: `loop_level` when
    calibrated (with the profile's models, as `look_levels`), else α."""
    if not rule.calibrated:
        return rule.alpha
    bounds = np.full((1, arms), np.nan)
    bounds[0, : profile.arms] = profile.factor
    return float(
        profile_levels(bounds, loop_level(arms, rule), lambda p: loop_level(arms, rule, p))[0]
    )


# ---------------------------------------------------------------------------------------------
# the loop's calibrated level

LOOP_CALIBRATION_AUDITS = 8000
"""Null audits per panel model behind a loop's level and its printed rate (MC s.e. 0.0024 at
0.05; more at small α). At 4,000 the panel's worst of eight fresh rates, a maximum of noisy
estimates, printed 0.051–0.052 for loops calibrated to 0.043 (3 arms ≤ 4, 2 ≤ 5)."""
LOOP_CALIBRATION_SEED = 1
"""Not the design rate's seed 0: the rate printed beside the level is measured on fresh draws."""
LOOP_LEVEL_VERSION = 4
_BISECTIONS = 12


def resolving_audits(alpha: float) -> int:
    """Null audits per model that resolve α − 3 MC s.e. (3 s.e. ≤ α/2, so a rate that holds is
    measurably below α): at least `LOOP_CALIBRATION_AUDITS`, 35,964 at α = 0.001."""
    return max(LOOP_CALIBRATION_AUDITS, math.ceil(36.0 * (1.0 - alpha) / alpha))


@lru_cache(maxsize=256)
def loop_level(arms: int, rule: SequentialRule, profile: Profile = NO_PROFILE) -> float:
    """The largest spending level ≤ α at which this exact loop (arms, max seeds, baseline seeds
    and cap, futility, rounds) declares a null arm in at most α − 3 MC s.e. of the audits under
    every model of the noise panel (`PANEL`), found by bisection on common random draws; cached
    in process and on disk like the fixed designs' α′. The Welch tests of 2–3 seeds against a
    noisy baseline are liberal when an arm is wider than the rest, which O'Brien–Fleming's
    nominal boundaries do not know about: 1 arm ≤ 5 seeds spends 0.079 at α = 0.05 under
    hetero:6 uncalibrated. With a `profile` (arms wider than the panel's 6×, from the audit's
    own seeds), the level is the same bisection under that one model, as a fixed design's α′
    is (`look_levels` takes the smaller)."""
    plain = dataclasses.replace(rule, calibrated=False)
    models = tuple(parse_one(name) for name in PANEL) if not profile.arms else (profile.model(),)
    fields = {"arms": arms, "rule": dataclasses.asdict(plain), "models": [m.spec for m in models]}
    fields |= {"audits": resolving_audits(rule.alpha), "seed": LOOP_CALIBRATION_SEED}
    fields |= {"v": LOOP_LEVEL_VERSION}
    return cached(
        "loop-level",
        fields,
        lambda: _bisect_level(arms, plain, models),
        lambda v: in_range(v, 0.0, plain.alpha),
    )


def _bisect_level(arms: int, rule: SequentialRule, models: tuple[NoiseModel, ...]) -> float:
    audits = resolving_audits(rule.alpha)
    # 3 MC s.e. below α, not 2: the printed rate is a fresh draw's panel maximum, and at 2
    # s.e. 1 arm ≤ 4 seeds printed 0.051 (level bisected to sit just below a jump in its draws)
    target = rule.alpha - 3.0 * math.sqrt(rule.alpha * (1.0 - rule.alpha) / audits)
    draws = [
        _draw_sequential(arms, audits, (), rule.baseline_cap, rule.max_seeds, LOOP_CALIBRATION_SEED,
                         model)[:2]
        for model in models
    ]  # fmt: skip

    def holds(level: float) -> bool:
        at = dataclasses.replace(rule, alpha=level)
        return all(_null_rate(at, base, values) <= target for base, values in draws)

    if holds(rule.alpha):
        return rule.alpha
    floor = rule.alpha * 1e-4  # declares nothing in practice
    low, high = floor, rule.alpha  # holds(low), not holds(high)
    for _ in range(_BISECTIONS):
        mid = math.sqrt(low * high) if low == floor else (low + high) / 2
        low, high = (mid, high) if holds(mid) else (low, mid)
    return low


def _null_rate(rule: SequentialRule, baseline: np.ndarray, values: np.ndarray) -> float:
    state, _, _, _ = run_sequential(rule, baseline, values)
    return float(np.mean(np.any(_significant(state), axis=1)))


# ---------------------------------------------------------------------------------------------
# the test


CONFIRMATION_SEEDS = 2
"""No arm is declared before it has this many seeds: its own spread must have been seen."""


@dataclass(frozen=True)
class ArmTests:
    """The robust test of every arm of a batch of families (leading axis: the batch)."""

    delta: np.ndarray
    """(B, m) Δ, positive = better."""
    sigma: np.ndarray
    """(B,) pooled σ."""
    df: np.ndarray
    """(B,) its degrees of freedom."""
    t: np.ndarray
    """(B, m) Welch's t (n >= 2), else Δ over the single seed's 6σ-bounded scale."""
    p: np.ndarray
    n: np.ndarray
    """(B, m) seeds per arm."""
    n0: np.ndarray
    """(B,) baseline seeds."""
    scale: np.ndarray
    """(B, m) the scale Δ is divided by in `t` (its standard error)."""
    arm_df: np.ndarray
    """(B, m) the degrees of freedom of each arm's test (Welch's, or σ's for one seed)."""
    ratio: np.ndarray
    """(B, m) each multi-seed arm's upper bound on its seed σ over σ (NaN for one seed): the
    profile the loop's level is calibrated with (`look_levels`)."""


def arm_tests(baseline: np.ndarray, arms: np.ndarray, sign: float = 1.0) -> ArmTests:
    """Test (B, m, K) arm values against (B, K0) baseline values; NaN marks a missing seed."""
    n0 = np.sum(~np.isnan(baseline), axis=-1)
    n = np.sum(~np.isnan(arms), axis=-1)
    mean0 = np.nansum(baseline, axis=-1) / n0
    mean = np.nansum(arms, axis=-1) / np.maximum(n, 1)
    squares0 = np.nansum((baseline - mean0[:, None]) ** 2, axis=-1)
    arm_squares = np.nansum((arms - mean[..., None]) ** 2, axis=-1)
    df = (n0 - 1) + np.sum(np.maximum(n - 1, 0), axis=-1)
    sigma = np.sqrt((squares0 + arm_squares.sum(axis=-1)) / df)
    delta = sign * (mean - mean0[:, None])
    with np.errstate(divide="ignore", invalid="ignore"):
        arm_var = arm_squares / (n - 1)
        robust = statistical_test(Test.ROBUST)
        base_var = (squares0 / (n0 - 1))[:, None]
        spread = Spread(n, n0[:, None], sigma[:, None], df[:, None], arm_var, base_var)
        scale, arm_df = robust.standard_error(spread)
        stat, _, p = robust.scaled(delta, scale, arm_df)
        ratio = ratio_bounds(arm_var, sigma[:, None], n, df[:, None])
    return ArmTests(delta, sigma, df, stat, p, n, n0, scale, arm_df, ratio)


# ---------------------------------------------------------------------------------------------
# one look


def crossing_probability(
    effect: np.ndarray,
    n: np.ndarray,
    n0: np.ndarray | float,
    n_then: np.ndarray | float,
    n0_then: np.ndarray | float,
    threshold: np.ndarray,
    predictive: bool = False,
) -> np.ndarray:
    """P(|Test.Z| at (n_then, n0_then) seeds crosses the nominal two-sided `threshold`), given the
    score at (n, n0) seeds and a true effect of `effect` σ (the current trend): the Brownian
    motion of the z statistic on the information scale I = 1/(1/n + 1/n₀). `predictive`
    averages over the effect's flat-prior posterior N(effect, 1/I) instead (predictive power,
    Spiegelhalter, Freedman & Blackburn 1986), which is less eager to stop on little data."""
    info = 1.0 / (1.0 / n + 1.0 / n0)
    info_then = 1.0 / (1.0 / n_then + 1.0 / n0_then)
    gain = np.maximum(info_then - info, 1e-12)
    score = effect * info
    edge = stats.norm.isf(threshold / 2.0) * np.sqrt(info_then)
    mean = score + effect * gain
    spread = np.sqrt(gain + gain**2 / info) if predictive else np.sqrt(gain)
    return stats.norm.sf((edge - mean) / spread) + stats.norm.cdf((-edge - mean) / spread)


def look(
    rule: SequentialRule,
    tests: ArmTests,
    state: np.ndarray,
    tested: np.ndarray,
) -> np.ndarray:
    """The states after one look: `tested` (B, m) arms got a new seed since their last look.

    Holm step by step: arms that cross at the current level are rejected, which raises the level
    of the rest, until no more cross; then open arms that are futile (or at their last look) stop.
    """
    m = state.shape[1]
    bounds = row_boundaries(rule, tests)
    look_index = np.clip(tests.n - 1, 0, rule.max_seeds - 1)
    state = holm_step_down(
        state, tests, tested & (tests.n >= CONFIRMATION_SEEDS), bounds, look_index
    )
    level = np.minimum(np.sum(_significant(state), axis=1), m - 1)
    final = bounds[np.arange(len(state)), level, rule.max_seeds - 1][:, None]
    power = crossing_probability(
        tests.delta / tests.sigma[:, None],
        tests.n,
        tests.n0[:, None],
        rule.max_seeds,
        rule.baseline_cap,
        final,
        predictive=True,
    )
    futile = (power < rule.futility) & (tests.n >= rule.futility_from)
    stop = tested & (state == LoopState.OPEN) & (futile | (tests.n >= rule.max_seeds))
    state[stop] = LoopState.FUTILE
    return state


def holm_step_down(
    state: np.ndarray,
    tests: ArmTests,
    tested: np.ndarray,
    bounds: np.ndarray,
    look_index: np.ndarray,
) -> np.ndarray:
    """Reject every tested open arm beyond 2σ whose p is below its look's threshold at the
    current Holm level (`bounds`: (B, m, looks), each audit's own); repeat while rejections
    raise the level."""
    state = state.copy()
    m = state.shape[1]
    rows = np.arange(len(state))[:, None]
    big = np.abs(tests.delta) >= NOISE_SIGMAS * tests.sigma[:, None]
    while True:
        level = np.minimum(np.sum(_significant(state), axis=1), m - 1)
        threshold = bounds[rows, level[:, None], look_index]
        cross = (state == LoopState.OPEN) & tested & big & (tests.p <= threshold)
        if not cross.any():
            return state
        state[cross] = np.where(tests.delta > 0, LoopState.IMPROVER, LoopState.REGRESSOR)[cross]


def next_seed_value(rule: SequentialRule, tests: ArmTests, state: np.ndarray) -> np.ndarray:
    """Value per run of one more seed of each open arm: the probability that its next look
    settles it (crosses its boundary, current trend, Holm level as it stands); 0 for the rest."""
    m = state.shape[1]
    bounds = row_boundaries(rule, tests)
    level = np.minimum(np.sum(_significant(state), axis=1), m - 1)
    rows = np.arange(len(state))[:, None]
    threshold = bounds[rows, level[:, None], np.clip(tests.n, 0, rule.max_seeds - 1)]
    n0_then = np.minimum(tests.n0 + 1, rule.baseline_cap)[:, None]
    value = crossing_probability(
        tests.delta / tests.sigma[:, None],
        tests.n,
        tests.n0[:, None],
        tests.n + 1,
        n0_then,
        threshold,
    )
    return np.where(state == LoopState.OPEN, value, 0.0)


# ---------------------------------------------------------------------------------------------
# simulation of the closed loop


RUNS_RANGE = (10, 90)
"""The percentiles of the simulated runs per audit that `plan` states as its range."""


@dataclass(frozen=True)
class SequentialSimulation(JsonResult):
    """The whole sequential loop under planted effects, next to the fixed design on the same
    draws (σ = 1; effects in σ)."""

    arms: int
    max_seeds: int
    baseline_seeds: int
    baseline_max: int
    audits: int
    alpha: float
    futility: float
    effects: tuple[float, ...]
    """Planted effects of the first arms; the rest are null."""
    seed: int
    fwer: float
    """Share of audits with >= 1 null arm declared improver/regressor."""
    fwer_se: float
    power: dict[str, float]
    """Planted effect (σ) → share of its arms declared improvers."""
    power_planted: float
    """Per planted arm: share of all planted arms (nonzero effect) declared in their true
    direction (NaN: none)."""
    all_found: float
    """Per audit: share of audits in which every planted arm is declared in its true direction."""
    runs_mean: float
    """Runs per audit (arms' seeds plus the baseline's)."""
    runs_max: int
    runs_range: tuple[float, float]
    """The 10th and 90th percentiles of the runs per audit: `plan`'s range."""
    rounds_mean: float
    """Rounds (looks) per audit: each is a barrier, so wall time >= rounds × one run."""
    fixed_fwer: float
    fixed_power: dict[str, float]
    fixed_power_planted: float
    fixed_all_found: float
    fixed_seeds: int
    fixed_runs: int
    """The fixed design: every arm `fixed_seeds` seeds, the baseline as many (>= baseline_seeds)."""
    stop_reasons: dict[str, float]
    """Share of arms per final state."""
    seeds_mean: dict[str, float]
    """Planted effect (σ, "null" for the rest) → mean seeds per arm."""
    noise: str = "normal"
    """The noise model of `fwer` (stats/records/noise_panel.py); `panel` runs all of them."""
    panel: tuple[PanelRate, ...] = ()
    """With `noise="panel"`: the null family-wise rate under each model of the panel."""
    panel_worst: PanelRate | None = None


def simulate_sequential(
    *,
    arms: int = 20,
    rule: SequentialRule | None = None,
    audits: int = 2000,
    effects: tuple[float, ...] = (),
    fixed_seeds: int | None = None,
    seed: int = 0,
    noise: str = "normal",
) -> SequentialSimulation:
    """Simulate `audits` sequential audits of `arms` arms (reproducible from `seed`), and on the
    same draws the fixed design: `fixed_seeds` per arm (default: the rule's maximum), as many
    for the baseline. `noise` names the seed-noise model (stats/records/noise_panel.py); with
    `panel`,
    `fwer` is the normal model's and `panel` holds every model's null rate."""
    rule = rule or SequentialRule()
    models = sequential_models(noise, arms, audits, effects, seed, rule, fixed_seeds)
    fixed_seeds = fixed_seeds or rule.max_seeds
    fixed_baseline = max(fixed_seeds, rule.baseline_seeds)
    cap, top = rule.baseline_cap, rule.max_seeds
    baseline, values, shift = _draw_sequential(
        arms, audits, effects, max(cap, fixed_baseline), max(top, fixed_seeds), seed, models[0]
    )
    state, n, n0, rounds = run_sequential(rule, baseline[:, :cap], values[..., :top])
    fixed_state = fixed_design(rule, baseline[:, :fixed_baseline], values[..., :fixed_seeds])
    groups = {f"{e:g}": np.flatnonzero(shift == e) for e in sorted(set(effects)) if e != 0.0}
    fwer, power, planted, all_found = _declared(state, shift, groups)
    fixed_fwer, fixed_power, fixed_planted, fixed_all_found = _declared(fixed_state, shift, groups)
    panel = _panel(arms, rule, audits, seed, models, fwer)
    return SequentialSimulation(
        arms=arms,
        max_seeds=top,
        baseline_seeds=rule.baseline_seeds,
        baseline_max=cap,
        audits=audits,
        alpha=rule.alpha,
        futility=rule.futility,
        effects=tuple(effects),
        seed=seed,
        fwer=fwer,
        fwer_se=math.sqrt(fwer * (1.0 - fwer) / audits),
        power=power,
        power_planted=planted,
        all_found=all_found,
        runs_mean=float(np.mean(n.sum(axis=1) + n0)),
        runs_max=int(np.max(n.sum(axis=1) + n0)),
        runs_range=_percentiles(n.sum(axis=1) + n0),
        rounds_mean=float(np.mean(rounds)),
        fixed_fwer=fixed_fwer,
        fixed_power=fixed_power,
        fixed_power_planted=fixed_planted,
        fixed_all_found=fixed_all_found,
        fixed_seeds=fixed_seeds,
        fixed_runs=arms * fixed_seeds + fixed_baseline,
        stop_reasons={code.label: float(np.mean(state == code)) for code in LoopState},
        seeds_mean=_seeds_mean(n, shift, groups),
        noise=noise,
        panel=panel,
        panel_worst=worst(panel),
    )


def _percentiles(runs: np.ndarray) -> tuple[float, float]:
    low, high = np.percentile(runs, RUNS_RANGE)
    return float(low), float(high)


def _seeds_mean(
    n: np.ndarray, shift: np.ndarray, groups: dict[str, np.ndarray]
) -> dict[str, float]:
    """Mean seeds per arm for each planted effect, and for the null arms ("null")."""
    null = shift == 0.0
    means = {k: float(np.mean(n[:, idx])) for k, idx in groups.items()}
    return means | ({"null": float(np.mean(n[:, null]))} if null.any() else {})


def fixed_design(rule: SequentialRule, baseline: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The final states of the fixed design on these seeds: one look at every arm, Holm."""
    audits, arms = values.shape[:2]
    return holm_step_down(
        np.zeros((audits, arms), dtype=np.int8),
        arm_tests(baseline, values),
        np.ones((audits, arms), dtype=bool),
        np.broadcast_to(holm_boundaries(rule.alpha, arms, 1), (audits, arms, 1)),
        np.zeros((audits, arms), dtype=int),
    )


def _declared(
    state: np.ndarray, shift: np.ndarray, groups: dict[str, np.ndarray]
) -> tuple[float, dict[str, float], float, float]:
    """What a design declared: its family-wise error rate over the null arms, the power per
    planted effect, the share of planted arms found and of audits that found them all."""
    fwer = float(np.mean(np.any(_significant(state[:, shift == 0.0]), axis=1)))
    power = {k: _found(state[:, idx], k) for k, idx in groups.items()}
    return fwer, power, _found_planted(state, shift), _all_found(state, shift)


def _panel(
    arms: int,
    rule: SequentialRule,
    audits: int,
    seed: int,
    models: tuple[NoiseModel, ...],
    first: float,
) -> tuple[PanelRate, ...]:
    if len(models) < 2:
        return ()
    rates = [first] + [sequential_null_fwer(arms, rule, audits, seed, m) for m in models[1:]]
    return tuple(
        panel_rate(r, audits, rule.alpha, m.spec) for r, m in zip(rates, models, strict=True)
    )


def sequential_null_fwer(
    arms: int, rule: SequentialRule, audits: int, seed: int, noise: NoiseModel
) -> float:
    """Share of `audits` null sequential audits with >= 1 arm declared, under `noise`."""
    baseline, values, _ = _draw_sequential(
        arms, audits, (), rule.baseline_cap, rule.max_seeds, seed, noise
    )
    state, _, _, _ = run_sequential(rule, baseline, values)
    return float(np.mean(np.any(_significant(state), axis=1)))


def _draw_sequential(
    arms: int,
    audits: int,
    effects: tuple[float, ...],
    baseline_seeds: int,
    seeds: int,
    seed: int,
    noise: NoiseModel,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B, baseline_seeds) baseline and (B, arms, seeds) arm values with `effects` planted on the
    first arms; `hetero`'s wide arms are the first null ones."""
    rng = np.random.default_rng(seed)
    baseline = noise.draw_baseline(rng, (audits, baseline_seeds))
    values = noise.draw(rng, (audits, arms, seeds))
    shift = np.zeros(arms)
    shift[: len(effects)] = effects
    sigmas = np.ones(arms)
    sigmas[len(effects) :] = noise.arm_sigmas(arms - len(effects))[::-1]
    return baseline, values * sigmas[None, :, None] + shift[None, :, None], shift


def run_sequential(
    rule: SequentialRule, baseline: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The closed loop on pre-drawn seeds: (B, cap) baseline and (B, m, N) arm values, revealed
    round by round (every open arm and the baseline get one more seed per round). Returns the
    final states, the seeds each arm got, the baseline's, and the rounds of each audit."""
    batch, m, top = values.shape
    n = np.ones((batch, m), dtype=int)
    n0 = np.full(batch, rule.baseline_seeds)
    state = np.zeros((batch, m), dtype=np.int8)
    tested = np.ones((batch, m), dtype=bool)
    seeds = np.arange(top)
    base_seeds = np.arange(baseline.shape[1])
    rounds = np.ones(batch, dtype=int)
    for _ in range(top):
        shown = np.where(seeds[None, None, :] < n[..., None], values, np.nan)
        shown0 = np.where(base_seeds[None, :] < n0[:, None], baseline, np.nan)
        state = look(rule, arm_tests(shown0, shown), state, tested)
        tested = (state == LoopState.OPEN) & (n < top)
        if not tested.any():
            break
        n = n + tested
        more = tested.any(axis=1)
        n0 = np.where(more, np.minimum(n0 + 1, rule.baseline_cap), n0)
        rounds = rounds + more
    return state, n, n0, rounds


def _significant(state: np.ndarray) -> np.ndarray:
    return (state == LoopState.IMPROVER) | (state == LoopState.REGRESSOR)


def _found_planted(state: np.ndarray, shift: np.ndarray) -> float:
    wanted = np.where(shift > 0, LoopState.IMPROVER, LoopState.REGRESSOR)
    planted = shift != 0.0
    return float(np.mean(state[:, planted] == wanted[planted])) if planted.any() else math.nan


def _all_found(state: np.ndarray, shift: np.ndarray) -> float:
    wanted = np.where(shift > 0, LoopState.IMPROVER, LoopState.REGRESSOR)
    planted = shift != 0.0
    hits = state[:, planted] == wanted[planted]
    return float(np.mean(np.all(hits, axis=1))) if planted.any() else math.nan


def _found(state: np.ndarray, effect: str) -> float:
    wanted = LoopState.IMPROVER if float(effect) > 0 else LoopState.REGRESSOR
    return float(np.mean(state == wanted))


SEQUENTIAL_PANEL_AUDITS = LOOP_CALIBRATION_AUDITS
"""Null audits per panel model in a sequential design's rate (s.e. 0.0024 at 0.05, enough to
see 0.056 above α; `resolving_audits` at small α)."""
SEQUENTIAL_RATE_VERSION = 6


def final_thresholds(rule: SequentialRule, tests: ArmTests, state: np.ndarray) -> np.ndarray:
    """(B, m) the nominal two-sided p threshold of each arm's last look (its seeds' look) at the
    family's final Holm level: the level its final test is judged at."""
    m = state.shape[1]
    bounds = row_boundaries(rule, tests)
    level = np.minimum(np.sum(_significant(state), axis=1), m - 1)
    rows = np.arange(len(state))[:, None]
    return bounds[rows, level[:, None], np.clip(tests.n - 1, 0, rule.max_seeds - 1)]


def repeated_interval(
    delta: float, scale: float, df: float, threshold: float
) -> tuple[float, float]:
    """The repeated confidence interval of an arm at its last look (Jennison & Turnbull 2000,
    ch. 9), dual to the loop's own test: Δ ± t_df(threshold/2)·SE with the SE and df of the
    arm's robust test (Welch's from two seeds, the 6σ bound for one) and `threshold` that look's
    nominal level at the Holm level it was judged under (`final_thresholds`); so it excludes 0
    exactly when the arm's p is below its boundary."""
    return interval(delta, scale, df, threshold)


@dataclass(frozen=True)
class SequentialDesignRate:
    """What a sequential family's table states: the measured family-wise error rate of exactly
    that design (arms, rule) under the null, normal and over the noise panel, and its minimum
    detectable effect at 80% power."""

    arms: int
    rule: SequentialRule
    audits: int
    fwer: float
    fwer_se: float
    mde_sigmas: float
    """The smallest effect (σ) one planted arm is declared in ≥ 80% of audits (bisection)."""
    panel_worst: PanelRate | None = None

    @property
    def above_alpha(self) -> bool:
        worst_above = self.panel_worst is not None and self.panel_worst.above_alpha
        return self.fwer > self.rule.alpha + 2 * self.fwer_se or worst_above

    def describe(self) -> str:
        worst_rate = self.panel_worst
        panel = (
            f", noise panel's worst {worst_rate.fwer:.3f} ± {worst_rate.fwer_se:.3f} "
            f"({worst_rate.noise}, {worst_rate.audits:,} audits each)"
            if worst_rate
            else ""
        )
        flag = " — ABOVE α, verdicts do not hold" if self.above_alpha else ""
        return (
            f"design: {self.arms} arms, ≤ {self.rule.max_seeds} seeds each, baseline "
            f"{self.rule.baseline_seeds}+; robust tests (Welch from 2 seeds, a confirmation seed "
            f"before any verdict), O'Brien–Fleming spending + Holm, α = {self.rule.alpha}"
            f"{self._level()}; "
            f"measured FWER: normal noise {self.fwer:.3f} ± {self.fwer_se:.3f} "
            f"({self.audits:,} null audits){panel}{flag}; MDE {self.mde_sigmas:.1f}σ at 80% power"
        )

    def _level(self) -> str:
        if not self.rule.calibrated:
            return " (uncalibrated: the boundaries spend α itself)"
        level = spent_level(self.rule, self.arms)
        return f", boundaries spending the loop's calibrated level {level:.4g}"


@lru_cache(maxsize=64)
def sequential_design_rate(
    arms: int, rule: SequentialRule, audits: int = 2000
) -> SequentialDesignRate:
    """Simulate the closed loop of this design under the null (seed 0, fresh draws beside the
    calibration's) under every model of the noise panel, `resolving_audits` each, and bisect
    the planted effect that reaches 80% power (`audits` per effect: at 500, 20 arms ≤ 6 printed
    3.03σ, where fresh draws found 0.76); cached per design in
    this process and on disk (like `design_rate`)."""
    null_audits = resolving_audits(rule.alpha)
    fields = {"arms": arms, "rule": dataclasses.asdict(rule), "audits": audits, "panel": PANEL}
    fields |= {"panel_audits": null_audits, "v": SEQUENTIAL_RATE_VERSION}

    def simulate() -> dict[str, Any]:
        rates = {
            name: sequential_null_fwer(arms, rule, null_audits, 0, parse_one(name))
            for name in PANEL
        }
        low, high = 0.0, 64.0
        for _ in range(12):
            mid = (low + high) / 2
            found = planted_power(arms, rule, mid, audits)
            low, high = (low, mid) if found >= 0.8 else (mid, high)
        return {"mde": high, "panel": rates}

    def parse(stored: Any) -> dict[str, Any]:
        if sorted(stored["panel"]) != sorted(PANEL):
            raise ValueError("not the panel's models")
        return {
            "mde": in_range(stored["mde"], 0.0, 64.0),
            "panel": {name: in_range(r, 0.0, 1.0) for name, r in stored["panel"].items()},
        }

    record = cached("sequential", fields, simulate, parse)
    return _sequential_rate(arms, rule, null_audits, record["mde"], record["panel"])


def _sequential_rate(
    arms: int, rule: SequentialRule, audits: int, mde: float, rates: dict
) -> SequentialDesignRate:
    panel = tuple(panel_rate(rates[name], audits, rule.alpha, name) for name in PANEL)
    fwer = rates[NORMAL_SPEC]
    se = math.sqrt(fwer * (1.0 - fwer) / audits)
    return SequentialDesignRate(arms, rule, audits, fwer, se, mde, worst(panel))


@lru_cache(maxsize=1024)
def planted_power(arms: int, rule: SequentialRule, effect: float, audits: int) -> float:
    """The loop's power: the share of `audits` simulated audits (seed 0, so every effect sees
    the same draws) in which one arm with a true effect of `effect`·σ, the others null, is
    declared an improver; at effect 0, the share of null arms given any verdict."""
    if effect == 0.0:
        null = simulate_sequential(arms=arms, rule=rule, audits=audits).stop_reasons
        return null["improver"] + null["regressor"]
    return simulate_sequential(arms=arms, rule=rule, audits=audits, effects=(effect,)).power_planted


@lru_cache(maxsize=64)
def sequential_power_curve(arms: int, rule: SequentialRule, audits: int = 2000) -> PowerCurve:
    """The loop's power curve, on the draws `sequential_design_rate` bisects its MDE on, so the
    curve passes through that MDE at 80%."""
    mde = sequential_design_rate(arms, rule, audits).mde_sigmas
    method = (
        f"sequential loop, simulated ({audits:,} audits per effect): {arms} arm(s), "
        f"<= {rule.max_seeds} seeds each, baseline {rule.baseline_seeds}+, O'Brien–Fleming + Holm"
    )
    return curve_points(lambda x: planted_power(arms, rule, x, audits), 0.8, mde, method)
