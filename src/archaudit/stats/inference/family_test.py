"""Which test judges a family of arms, and the variance arithmetic the Welch tests share.

One family, one test (docs/protocol.md, Statistics), chosen from the design (`choose_test`).
Each test is a registered entry, one file each in `stats/tests/` (its statistic,
reference distribution, calibration, power kernel and words); the built-in ones:

- `z` (paper mode, `reference="normal"`): z = Δ/σ against the normal distribution. It treats σ as
  exact, so it is uncalibrated when σ comes from a few seeds.
- `pooled-t`: t = Δ / (σ·√(1/n + 1/n₀)) with the noise floor's degrees of freedom, only when
  equal variance is declared (`--equal-variance`). For a single-seed arm this is the
  prediction-interval t, Δ / (σ·√(1 + 1/n₀)): the candidate test of the robust family.
- `welch`: the protected moderated Welch t of the arm's seeds against the baseline's, when
  every arm has >= 2 seeds: each side's seed variance is moderated toward the *other* groups'
  pooled σ² (a leave-one-out prior, so a wide arm does not set its own) with up to `PRIOR_DF`
  prior degrees of freedom (limma's moderated variance, Smyth 2004), fewer when the side's own
  spread is improbable under that prior (Phipson et al. 2016's robust empirical Bayes: a
  hypervariable arm keeps its own variance); the baseline, which every comparison shares, is
  never moderated below its own variance. Then Welch's SE and df on the moderated variances.
- `robust` (the default when an arm has one seed): plain Welch for every arm with >= 2 seeds. A
  single-seed arm cannot show its own spread, so it is tested as if its seed σ were F times the
  pooled σ: t = Δ / (σ·√(F² + 1/n₀)) with σ's df, F the larger of the panel's widest (6) and the
  upper bound of the widest multi-seed arm's ratio (stats/simulation/profile.py; ∞ with none). An
  arm that
  clears the ordinary prediction-interval t but not that bound is a *candidate*.

Each test's p is corrected over the family and compared with the design's calibrated level α′
(stats/simulation/calibrate.py), not with α itself. The test is chosen per family, not per arm, but
Welch
uses each arm's own spread, so more seeds and a larger Δ do not always mean a smaller p.

Measured over the noise panel (stats/records/noise_panel.py, docs/verdicts.md), only tests in
which an
arm's own variance enters hold α when arms' seed variances differ. `pooled-t` (declared equal
variance, `--equal-variance`) and `z` (paper mode) are labelled assumptions of the user.

The statistics work elementwise on numpy arrays, so `judge` (one audit) and `simulate_null`
(thousands of audits at once) run the same arithmetic.
A registered test of your own is chosen with `JudgeOptions.test`
(docs/guides/statistical-test.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import fdtrc, stdtrit

from archaudit.names import Reference, Test
from archaudit.stats.inference.significance import welch_df

REFERENCES = tuple(Reference)
"""`t` (default, calibrated: σ's own uncertainty is in the reference distribution) and
`normal` (paper mode: reproduces published z-tables, uncalibrated)."""
Values = float | np.ndarray
"""One arm's number or an array of them: the statistics broadcast, so `judge` passes scalars
and the simulations pass arrays of thousands of audits."""
PRIOR_DF = 2.0
"""d₀, the prior degrees of freedom with which Welch's variances are moderated toward the
pooled σ² (limma's moderated t, Smyth 2004, Stat. Appl. Genet. Mol. Biol. 3:3). Chosen by
simulation over the noise panel (benchmarks/power_candidates.py): at each design's calibrated
level, d₀ = 2 detects 8.1σ in 2 arms × 2 seeds (plain Welch 18.1σ), 7.3σ in 19 × 2 (48.2σ),
4.7σ in 19 × 3 (10.4σ); d₀ = 1, 4, ∞ (the pooled t) and limma's own estimate of d₀ do worse
somewhere. It is the most a group gets: `prior_weight` lowers it for a group whose spread the
prior makes improbable."""
ROBUST_TAIL = 0.2
"""Below this F-tail probability of a group's spread under its prior, its d₀ falls in
proportion (`prior_weight`). Chosen by simulation over the panel and beyond it: 0.5 cost
2 × 2 / 19 × 2 / 19 × 3 10.8 / 12.7 / 7.3σ at their α′, 0.2 11.2 / 11.2 / 5.5σ, 0.1
11.9 / 10.4 / 5.0σ."""


def choose_test(
    arm_seeds: Sequence[int],
    *,
    reference: str = "t",
    equal_variance: bool = False,
    correction: str = "holm",
    test: str | None = None,
) -> str:
    """The one test of a family whose tested arms have `arm_seeds` seeds: `test` when given (a
    registered test the user chose), else the design's (Dunnett runs on the same tests, through
    their p-values: `StatTest.dunnett_statistic`)."""
    if test is not None:
        return test
    if reference == Reference.NORMAL:
        return Test.Z
    if equal_variance:
        return Test.POOLED_T
    return Test.ROBUST if min(arm_seeds, default=2) < 2 else Test.WELCH


def plain_welch(
    n_arm: Values, n_base: Values, arm_var: Values | None, base_var: Values | None
) -> tuple[np.ndarray, np.ndarray]:
    """(SE, df) of Welch's t on the arm's and the baseline's own variances."""
    if arm_var is None or base_var is None:
        raise ValueError("Welch's test needs the arm's and the baseline's seed variances")
    se_arm, se_base = np.divide(arm_var, n_arm), np.divide(base_var, n_base)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(se_arm + se_base), welch_df(se_arm, se_base, n_arm, n_base)


def leave_one_out(var: Values, df: Values, sigma: Values, dof: Values) -> tuple[Values, Values]:
    """(prior σ², its df) of one group with seed variance `var` on `df` df: the pooled σ² of
    every *other* group, (ν·σ̂² − df·s²)/(ν − df), so that a wide group does not set its own
    prior (it is part of σ̂, and at 19 × 2 one 20× arm is most of it)."""
    rest = np.maximum(np.asarray(dof, dtype=float) - df, 1.0)
    pooled = np.square(np.asarray(sigma, dtype=float)) * np.asarray(dof, dtype=float)
    with np.errstate(invalid="ignore"):
        prior = np.maximum(pooled - np.multiply(df, var), 0.0) / rest
    return prior, rest


def prior_weight(var: Values, df: Values, prior: Values, prior_df: Values) -> np.ndarray:
    """d₀ of one group: `PRIOR_DF`, falling linearly to 0 as the F-tail probability of its
    spread under the prior, P(F(df, prior df) >= s²/prior), falls below `ROBUST_TAIL` (a
    group whose own spread the prior makes improbable keeps its own variance: Phipson et al.
    2016's robust empirical Bayes, by a weight rather than a mixture)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = fdtrc(df, prior_df, np.divide(var, prior))
    return PRIOR_DF * np.minimum(1.0, np.nan_to_num(tail, nan=0.0) / ROBUST_TAIL)


def protected(var: Values, df: Values, sigma: Values, dof: Values) -> tuple[np.ndarray, np.ndarray]:
    """(moderated variance, its prior weight d₀) of one group with seed variance `var` on `df`
    df: (d₀·s₀² + df·s²)/(d₀ + df), s₀² the other groups' pooled σ² (`leave_one_out`) and d₀
    its own (`prior_weight`)."""
    prior, rest = leave_one_out(var, df, sigma, dof)
    weight = prior_weight(var, df, prior, rest)
    return (weight * prior + np.multiply(df, var)) / (weight + np.asarray(df, dtype=float)), weight


def moderated_parts(
    n_arm: Values, n_base: Values, sigma: Values, dof: Values, arm_var: Values, base_var: Values
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(arm's squared SE, baseline's squared SE, arm's d₀, baseline's d₀) of the protected
    moderated Welch t. The baseline, which every comparison shares, is never moderated below
    its own variance (max(own, moderated)); its prior still lends it d₀ degrees of freedom.
    Chosen by simulation (benchmarks/design_grid.py, docs/verdicts.md): keeping the baseline's
    d₀ where its own variance is kept cost nothing in α′ and gave 19 × 3 5.5σ (6.9σ without)."""
    n = np.asarray(n_arm, dtype=float)
    var_arm, d_arm = protected(arm_var, n - 1, sigma, dof)
    var_base, d_base = protected(base_var, n_base - 1, sigma, dof)
    return var_arm / n, np.maximum(var_base, base_var) / n_base, d_arm, d_base


def moderated_welch(
    n_arm: Values, n_base: Values, sigma: Values, dof: Values, arm_var: Values, base_var: Values
) -> tuple[np.ndarray, np.ndarray]:
    """(SE, df) of the protected moderated Welch t (`moderated_parts`): the
    Welch–Satterthwaite df with nᵢ − 1 + d₀ᵢ df per side, at most σ's `dof`."""
    se_arm, se_base, d_arm, d_base = moderated_parts(n_arm, n_base, sigma, dof, arm_var, base_var)
    df_arm = np.minimum(np.asarray(n_arm, dtype=float) - 1 + d_arm, dof)
    df_base = np.minimum(n_base - 1 + d_base, dof)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = welch_df(se_arm, se_base, df_arm + 1, df_base + 1)
    return np.sqrt(se_arm + se_base), df


def interval(delta: float, scale: float, df: float, alpha: float) -> tuple[float, float]:
    """Δ ± q·scale, q the two-sided 1 − α quantile of the test's reference (t with df, or the
    normal for df = ∞): it excludes 0 exactly when the test's p < α. With α/m it is one of m
    Bonferroni-simultaneous intervals."""
    q = float(stdtrit(df, 1.0 - alpha / 2))
    return (delta - q * scale, delta + q * scale)
