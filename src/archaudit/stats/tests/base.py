"""The statistical-test registry: a family test is one registered class, one file.

    @register_test
    class PooledT(StatTest):
        name = Test.POOLED_T
        title = "pooled t"
        ...
        def standard_error(self, spread): ...

One entry holds everything the house needs of a test, in the order a judgement uses it:

- its **statistic**: `standard_error` (the scale Δ is divided by, and its degrees of freedom,
  from a `Spread`: the seeds, σ and each side's seed variance), broadcast over numpy arrays,
  so `judge` (one audit) and the null simulation (thousands of audits at once,
  `stats/simulation/null_kernel.py`) run the same arithmetic;
- its **reference distribution**: `p_value` (Student's t by default, the normal for the paper's
  z) and `dunnett_statistic` (what Dunnett's step-down ranks);
- its **calibration**: `calibrated` (σ's own uncertainty is in the reference), `level_calibrated`
  (the design's level α′ is set by simulation over the noise panel,
  `stats/simulation/calibrate.py`), `bounds_single_seeds` (one seed is tested at the
  single-seed bound and is at most a candidate), `reproduces_paper` (the paper's own rule is
  also reported);
- its **simulation kernel**: `statistics` on arrays (above) and `power`, the probability that an
  arm of a `PowerDesign` is declared at a true effect, which `stats power`, `plan` and every MDE
  read (`stats/simulation/power.py`);
- its **words**: `title` (the JSON `decided_by.test`), `symbol` (the console column, t or z),
  `describe` (the judgement's test line), `assumptions` (what its verdicts assume), `caveat`
  (a warning under the table) and `above_alpha_advice`.

Every consumer looks a test up by its name (`statistical_test(judgement.test)`); none branches on
it. The built-in entries are the files beside this one; docs/guides/statistical-test.md adds one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, Protocol, TypeVar

import numpy as np
from scipy import stats as sps
from scipy.special import ndtr, stdtr, stdtrit

from archaudit.registry import Registry
from archaudit.stats.records.noise_panel import WIDEST_FACTOR
from archaudit.stats.records.verdicts import NOISE_SIGMAS

Values = float | np.ndarray
"""One arm's number or an array of them: the statistics broadcast, so `judge` passes scalars
and the simulations pass arrays of thousands of audits."""
CRITICAL_GRID = 48
"""Exact t quantiles a Welch power kernel interpolates between (`welch_critical`)."""
QUADRATURE = 32
"""Gauss–Legendre nodes per χ² sum of squares in the moderated Welch power kernel."""


class PowerDesign(Protocol):
    """What a power kernel reads of one arm's design (`stats/simulation/power.Design`); hashable,
    so a kernel may cache its work per design."""

    def __hash__(self) -> int: ...

    @property
    def arm_seeds(self) -> int: ...
    @property
    def baseline_seeds(self) -> int: ...
    @property
    def level(self) -> float: ...
    @property
    def dof(self) -> int: ...
    @property
    def single_bound(self) -> float: ...


@dataclass(frozen=True)
class TestFacts:
    """What a test's words may quote of one judgement (built by
    `stats/judging/judgement_text.py`)."""

    sigma_dof: int
    own_df: str
    """"each arm's own Welch–Satterthwaite df (1.1–4.7)", or "" without a multi-seed arm."""
    moderation: str
    """How much each side borrowed from the pooled σ² (the moderated tests' d₀ range)."""
    single_seed_bound: float
    """The factor a single seed's σ is bounded by (∞: no multi-seed arm bounds it)."""
    bound_confidence: float
    """The confidence of the upper bound behind `single_seed_bound`."""


@dataclass(frozen=True, eq=False)
class Spread:
    """What a family test's statistic reads of one comparison, or of thousands at once (every
    field may be a numpy array; they broadcast): seeds on each side, the pooled σ and its
    degrees of freedom, each side's own seed variance (None where the test reads none), and
    the single-seed `bound` (a factor on σ)."""

    n_arm: Values
    n_base: Values
    sigma: Values
    dof: Values
    arm_var: Values | None = None
    base_var: Values | None = None
    bound: Values = WIDEST_FACTOR


class StatTest:
    """One family test. Subclass it, set the class attributes, override what differs from a
    t test on a scale you give (`standard_error`), and register it with `register_test`."""

    name: ClassVar[str]
    """The registry key, stored in every judgement's `test` (lower-case, `-` between words)."""
    title: ClassVar[str]
    """What a verdict says decided it (JSON `decided_by.test`)."""
    symbol: ClassVar[str] = "t"
    """The statistic's column heading in a console table."""
    calibrated: ClassVar[bool] = True
    """σ's own uncertainty is in the reference distribution (False: the paper's z)."""
    level_calibrated: ClassVar[bool] = False
    """The design's level α′ is set by simulation over the noise panel (calibrate.py)."""
    bounds_single_seeds: ClassVar[bool] = False
    """A single-seed arm is tested at the single-seed bound and is at most a candidate."""
    moderated: ClassVar[bool] = False
    """Each side's variance borrows from the other groups' pooled σ² (its d₀ is reported, and
    its rate holds while the baseline is no wider than the panel covers)."""
    covered_by_panel: ClassVar[bool] = False
    """Its rate is measured over the noise panel's spreads, so a judgement says while which
    spreads it holds."""
    reproduces_paper: ClassVar[bool] = False
    """The paper's own rule (nominal α, no calibration) is reported beside its verdict."""
    above_alpha_advice: ClassVar[str] = "more seeds per arm, or the sequential loop"
    """What a design whose measured rate is above α should change."""

    # -- the statistic -------------------------------------------------------------------------

    def standard_error(self, spread: Spread) -> tuple[np.ndarray, np.ndarray]:
        """(the scale Δ is divided by, degrees of freedom), broadcast over the spread's
        arrays."""
        raise NotImplementedError(f"statistical test {self.name!r} has no standard_error")

    def statistics(
        self, delta: Values, spread: Spread
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(statistic, degrees of freedom, two-sided p), broadcast over the inputs; `delta` is
        signed so that positive = better."""
        return self.scaled(delta, *self.standard_error(spread))

    def scaled(
        self, delta: Values, scale: np.ndarray, df: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(statistic, df, two-sided p) of Δ over the test's `scale`."""
        with np.errstate(divide="ignore", invalid="ignore"):
            stat = np.asarray(delta, dtype=float) / scale
        return stat, df, self.p_value(stat, df)

    def prior_weights(self, spread: Spread) -> tuple[float, float]:
        """(arm's d₀, baseline's d₀) a moderated test lent each side; NaN: nothing moderated."""
        return math.nan, math.nan

    # -- the reference distribution ------------------------------------------------------------

    def p_value(self, stat: np.ndarray, df: np.ndarray) -> np.ndarray:
        """Two-sided p of `stat` against Student's t with `df` degrees of freedom."""
        return 2.0 * stdtr(df, -np.abs(stat))

    def dunnett_statistic(self, stat: np.ndarray, p: np.ndarray, dof: int) -> np.ndarray:
        """What Dunnett's step-down ranks and bounds: each arm's p read as the pooled t with
        σ's `dof` that has the same p (so the test's own variances and df enter Dunnett's
        shared-baseline correlation)."""
        return -np.sign(stat) * stdtrit(float(dof), np.asarray(p, dtype=float) / 2.0)

    # -- the simulation kernel -----------------------------------------------------------------

    def power(self, effect: float, design: PowerDesign) -> float:
        """P(an arm of `design` is declared an improver or regressor) at a true `effect`·σ."""
        raise NotImplementedError(f"statistical test {self.name!r} has no power kernel")

    # -- the words -----------------------------------------------------------------------------

    def describe(self, facts: TestFacts) -> str:
        """The judgement's line that names the test."""
        return f"{self.name} test ({self.title})"

    def assumptions(self, facts: TestFacts) -> tuple[str, ...]:
        """What its verdicts assume beyond the seeds themselves (labelled, never silent)."""
        return ()

    def caveat(self, sigma_dof: int) -> str | None:
        """A warning every table judged by it carries (None: none)."""
        return None


STAT_TESTS: Registry[StatTest] = Registry("statistical test")
"""Every family test by name: the built-in ones (this package) and any a plugin registers."""
S = TypeVar("S", bound=type[StatTest])


def register_test(cls: S) -> S:
    """Class decorator: register one instance of `cls` under `cls.name`."""
    STAT_TESTS.register(str(cls.name))(cls())
    return cls


def statistical_test(name: str) -> StatTest:
    """The registered test called `name` (an unknown name fails with did-you-mean)."""
    return STAT_TESTS.get(name)


# -- kernels the built-in tests share -----------------------------------------------------------


def noncentral_power(effect: float, design: PowerDesign, threshold_spread: float) -> float:
    """Power of a rule that rejects when |Δ| >= max(t_ν·b, 2)·σ̂ (`b` = `threshold_spread`),
    Δ ~ N(effect, a²σ²), a = √(1/n_a + 1/n_b), σ̂² ~ σ²·χ²_ν/ν: the noncentral-t tail, exactly."""
    spread = arm_spread(design)
    quantile = sps.t.isf(design.level / 2, design.dof)
    return noncentral_tails(effect, max(quantile * threshold_spread, NOISE_SIGMAS) / spread, design)


def noncentral_tails(effect: float, threshold: float, design: PowerDesign) -> float:
    """P(|T'| >= threshold), T' ~ t'(ν, effect/a). Both tails as upper tails: scipy's nct.cdf
    is NaN far out in the lower tail."""
    noncentrality = effect / arm_spread(design)
    upper = sps.nct.sf(threshold, design.dof, noncentrality)
    lower = sps.nct.sf(threshold, design.dof, -noncentrality)
    return float(upper + lower)


def arm_spread(design: PowerDesign) -> float:
    """a = √(1/n_a + 1/n_b): Δ's standard deviation in σ."""
    return math.sqrt(1.0 / design.arm_seeds + 1.0 / design.baseline_seeds)


def expected_tails(
    effect: float, spread: float, threshold: np.ndarray, weights: np.ndarray
) -> float:
    """P(|Δ̂| beyond the threshold) for a true `effect`, weighted over the quadrature nodes."""
    tails = ndtr((effect - threshold) / spread) + ndtr((-effect - threshold) / spread)
    return float(np.sum(weights * tails))


def frozen(threshold: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cached arrays, read-only (every caller shares them)."""
    threshold.flags.writeable = False
    weights.flags.writeable = False
    return threshold, weights


@lru_cache(maxsize=64)
def welch_critical(
    level: float, df_min: float, df_max: float
) -> Callable[[np.ndarray], np.ndarray]:
    """t(ν) for ν in [df_min, df_max], interpolated in log–log space between exact quantiles."""
    grid = np.geomspace(df_min, df_max, CRITICAL_GRID) if df_max > df_min else np.array([df_min])
    log_t = np.log(sps.t.isf(level / 2, grid))
    log_df = np.log(grid)
    return lambda df: np.exp(np.interp(np.log(df), log_df, log_t))
