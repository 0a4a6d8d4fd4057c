"""A judgement in words: the lines above a verdict table (direction, σ, the test, the
calibrated level, the design's measured error rates and MDE, what the verdicts assume) and what
an arm's interval is. `stats`, the demo and the report print these; the record holds numbers."""

from __future__ import annotations

import math
from dataclasses import replace

from archaudit.formatting import interval as written_interval
from archaudit.formatting import num
from archaudit.stats.inference.corrections import ERROR_RATE_NAMES, FDR, UNCALIBRATED, declares
from archaudit.stats.judging.judgement import ArmVerdict, Judgement
from archaudit.stats.records.noise_panel import COVERED_BASELINE
from archaudit.stats.simulation.profile import BOUND_CONFIDENCE
from archaudit.stats.tests import TestFacts, statistical_test

FIXED_INTERVAL = "Bonferroni-simultaneous (1 − α) interval of the fixed design"
REPEATED_INTERVAL = (
    "repeated confidence interval of the sequential loop's last test of each arm (its Welch SE "
    "and df, or the 6σ bound for one seed, at its last look's O'Brien–Fleming boundary and Holm "
    "level): it excludes 0 exactly when that test crosses its boundary"
)


def interval_kind(j: Judgement) -> str:
    """What each arm's `interval` is."""
    return REPEATED_INTERVAL if j.sequential else FIXED_INTERVAL


def header(j: Judgement) -> list[str]:
    """The lines above a verdict table: direction, σ and its interval, the test, the calibrated
    level, the design's measured error rates and MDE, and the bounds they hold under (the
    loop's own lines for a sequential judgement)."""
    if j.sequential:
        return _loop_header(j)
    groups = j.sigma_groups
    pooled = ", ".join(groups) if len(groups) <= 3 else f"{len(groups)} groups"
    spread = written_interval(j.sigma_interval)
    lines = [
        f"{j.metric} at scale {j.scale}: {j.direction}",
        f"σ = {num(j.sigma)} (95% {spread}, {j.sigma_dof} df, pooled over {pooled}); "
        f"baseline mean {num(j.baseline_mean, 4)} ({j.baseline_n} seeds)",
        f"{_test_text(j)}; {j.correction} at α = {j.alpha}, m = {j.m}"
        + (" (controls the FDR, not the family-wise rate)" if j.error_rate == FDR else ""),
    ]
    rate = j.design
    if rate is not None:
        name = ERROR_RATE_NAMES[j.error_rate]
        lines.append(_level_text(j))
        lines.append(f"design's measured {name}: {rate.describe_rates()}{_holds_while(j)}")
        lines += [line for line in (rate.describe_candidates(),) if line]
        lines.append(_mde_text(j))
    return lines + assumptions(j)


def _mde_text(j: Judgement) -> str:
    """The design's MDE (the one number `plan` and `stats power` print for it, at α as this
    family is judged), and this table's own where its profile lowered α′."""
    rate = j.design
    assert rate is not None
    text = (
        f"design's {rate.describe_mdes(j.sigma)} at α = {j.alpha:g} (as `plan` and `stats power`)"
    )
    own = dict(j.mdes)
    if any(not math.isclose(own.get(n, mde), mde, rel_tol=1e-3) for n, mde in rate.mdes):
        text += f"; at this table's own α′ {replace(rate, mdes=j.mdes).describe_mdes(j.sigma)}"
    return text


def _loop_header(j: Judgement) -> list[str]:
    loop = j.sequential
    assert loop is not None
    lines = [
        f"{j.metric} at scale {j.scale} (sequential): {j.direction}",
        f"σ = {num(j.sigma)} ({j.sigma_dof} df); baseline mean "
        f"{num(j.baseline_mean, 4)} ({j.baseline_n} seeds)",
        f"the sequential loop: {loop.rounds} rounds, {loop.runs} runs, stopped: {loop.stop}; "
        f"O'Brien–Fleming within each arm, Holm across arms at α = {loop.rule.alpha}",
    ]
    if loop.design is not None:
        lines += [loop.design.describe(), f"MDE {num(j.mde)} at 80% power"]
    return lines


def _test_text(j: Judgement) -> str:
    return statistical_test(j.test).describe(_facts(j))


def _facts(j: Judgement) -> TestFacts:
    """What a test's words may quote of `j`."""
    multi = [a for a in j.arms if a.n_seeds > 1 and math.isfinite(a.statistic_df)]
    dfs = [a.statistic_df for a in multi]
    return TestFacts(
        sigma_dof=j.sigma_dof,
        own_df=f"each arm's own Welch–Satterthwaite df ({_span(dfs)})" if dfs else "",
        moderation=_moderation(multi),
        single_seed_bound=j.single_seed_bound,
        bound_confidence=BOUND_CONFIDENCE,
    )


def _span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return num(low) if num(low) == num(high) else f"{num(low)}–{num(high)}"


def _moderation(arms: list[ArmVerdict]) -> str:
    """How much each side borrowed from the other groups' pooled σ²: the d₀ range."""
    arm_d0 = [a.prior_df[0] for a in arms if math.isfinite(a.prior_df[0])]
    base_d0 = [a.prior_df[1] for a in arms if math.isfinite(a.prior_df[1])]
    parts = [f"arms' d₀ {_span(arm_d0)}"] if arm_d0 else []
    parts += [f"baseline's d₀ {_span(base_d0)}"] if base_d0 else []
    return (
        "each side's variance moderated toward the other groups' pooled σ² with "
        f"{', '.join(parts) or 'd₀ ≤ 2'} (≤ 2, less for a spread the prior makes improbable; "
        "the baseline never below its own variance)"
    )


def _level_text(j: Judgement) -> str:
    if not statistical_test(j.test).level_calibrated or j.correction in UNCALIBRATED:
        return f"p_adj is compared with α = {j.alpha} (test or correction uncalibrated)"
    if not math.isfinite(j.level) or (j.level >= j.alpha and not j.profile):
        return f"p_adj is compared with α = {j.alpha} (the panel needs no lower level)"
    source = (
        f"the noise panel and this audit's own profile ({j.profile})"
        if j.profile
        else "the noise panel"
    )
    return (
        f"p_adj is compared with the calibrated level α′ = {j.level:.3g}, set by "
        f"simulation so that the whole rule's rate is ≤ α = {j.alpha} over {source}"
    )


def _holds_while(j: Judgement) -> str:
    test = statistical_test(j.test)
    if not j.calibrated or not test.covered_by_panel or not math.isfinite(j.widest_ratio):
        return ""  # without a multi-seed arm nothing is declared: no bound is needed
    rate = j.design
    if j.design_above_alpha or not declares(j.correction) or rate is None:
        return ""  # the clause is true only of a rate that holds, and BH / none hold none
    worst = rate.panel_worst.fwer if rate.panel_worst else rate.fwer
    if max(rate.fwer, worst) > j.alpha:
        return ""  # within two s.e. of α is not ≤ α
    seen = f"observed here: arms up to {j.widest_ratio:.1f}×"
    if test.moderated and math.isfinite(j.baseline_ratio):
        seen += f", baseline {j.baseline_ratio:.1f}× the rest"
        return (
            f" (≤ α while no arm is wider than {j.covered_factor:.3g}× σ and the baseline no "
            f"wider than {COVERED_BASELINE:g}× the rest — {seen})"
        )
    return f" (≤ α while no arm is wider than {j.covered_factor:.3g}× σ — {seen})"


def assumptions(j: Judgement) -> list[str]:
    """What the verdicts assume beyond the seeds themselves (labelled, never silent)."""
    return list(statistical_test(j.test).assumptions(_facts(j)))
