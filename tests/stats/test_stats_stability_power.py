"""The stability verdict's primary test (stats/analyses/fragility.py): exact under the null,
powerful against planted fragile arms (stats/analyses/sweeps.py)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from archaudit.stats.analyses.fragility import MEASURES, Stratum, fragility_test, high_weights
from archaudit.stats.analyses.stability import (
    MORE_FRAGILE,
    NOT_ESTIMABLE,
    WITHIN_NOISE,
    SweepRun,
    judge_depth,
    judge_stability,
    measure,
)
from archaudit.stats.analyses.sweeps import (
    LRS,
    RANDOM_BREAKS,
    RECIPE_LR,
    SweepModel,
    breaking_at_top,
    grad_norm_times,
    simulate_adaptive,
    simulate_audit,
)

ALPHA = 0.05
PERMUTATIONS = 199


def _judge(models: dict[str, SweepModel], seeds: int, rng: np.random.Generator):
    sweeps = simulate_audit(models, seeds, rng)
    return judge_stability(sweeps, "baseline", alpha=ALPHA, permutations=PERMUTATIONS)


def test_high_weights_cover_the_rates_above_the_reference():
    weights = high_weights(LRS, RECIPE_LR)
    above = [lr for lr in LRS if lr > RECIPE_LR * (1 + 1e-9)]
    assert sum(weights) == pytest.approx(1.0)
    assert [w > 0 for w in weights] == [lr in above for lr in LRS]


def test_separated_strata_reach_the_permutation_bound():
    """Both of the arm's runs rank above both of the baseline's at k strata: the exact
    two-sided p is 2·C(4,2)^-k; the Monte-Carlo p is near it and the direction is fragile."""
    k = 3
    worse = tuple((1.0, math.inf, math.inf) for _ in range(2))
    fine = tuple((0.0, float(i), float(i)) for i in range(2))
    strata = [Stratum(worse, fine, 1 / k) for _ in range(k)]
    test = fragility_test(strata, permutations=9999)
    exact = 2 * math.comb(4, 2) ** -k
    assert test.direction == 1 and test.measure == MEASURES[0]
    assert test.p == pytest.approx(exact, abs=4 * math.sqrt(exact / 9999) + 1e-4)
    mirror = fragility_test([Stratum(s.base, s.arm, s.weight) for s in strata], 999)
    assert mirror.direction == -1


def test_nothing_to_compare_is_not_a_finding():
    same = tuple((0.0, 1.0, 1.0) for _ in range(2))
    test = fragility_test([Stratum(same, same, 1.0)], PERMUTATIONS)
    assert test.p == 1.0 and test.direction == 0


@pytest.mark.parametrize("base", [SweepModel(), RANDOM_BREAKS], ids=["quiet", "random breaks"])
def test_family_wise_error_on_null_sweeps(base: SweepModel):
    rng = np.random.default_rng(11)
    trials = 150
    hits = 0
    for _ in range(trials):
        verdicts = _judge({a: base for a in ("baseline", "a", "b", "c")}, 2, rng)
        hits += any(v.verdict != WITHIN_NOISE for v in verdicts)
    assert hits / trials <= ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / trials)


@pytest.mark.parametrize(
    ("planted", "seeds"),
    [(grad_norm_times(SweepModel(), 2.0), 3), (breaking_at_top(SweepModel(), 2), 3)],
    ids=["gradient norm 2x, 3 seeds", "breaks at the top two rates, 3 seeds"],
)
def test_a_planted_fragile_arm_is_found_in_most_audits(planted: SweepModel, seeds: int):
    rng = np.random.default_rng(5)
    trials = 30
    base = SweepModel()
    found = 0
    for _ in range(trials):
        verdicts = _judge({"baseline": base, "fragile": planted, "null": base}, seeds, rng)
        found += verdicts[0].verdict == MORE_FRAGILE
    assert found > trials / 2


def test_the_verdict_keeps_its_secondary_tests():
    rng = np.random.default_rng(3)
    (v,) = _judge({"baseline": SweepModel(), "a": SweepModel()}, 2, rng)
    assert v.p_primary is not None and v.p_primary_adjusted == v.p_primary  # one arm
    assert v.p_sensitivity is not None and v.p_stability is not None
    assert len(v.primary_z) == len(MEASURES)


def test_a_third_seed_goes_only_where_the_verdict_can_still_change():
    rng = np.random.default_rng(9)
    base = SweepModel()
    models = {"baseline": base, "fragile": breaking_at_top(base, 2), "null": base}
    outcome = simulate_adaptive(models, rng, promising=0.25, permutations=PERMUTATIONS)
    two, three = 2 * len(LRS), 3 * len(LRS)
    # the baseline and the fragile arm get a third seed; the null arm keeps two unless promising
    assert outcome.runs in (2 * three + two, 3 * three)
    assert outcome.verdicts[0].verdict == MORE_FRAGILE
    none = simulate_adaptive(models, rng, promising=0.0, permutations=PERMUTATIONS)
    assert none.runs == 3 * two


def test_a_range_that_reaches_the_top_of_the_grid_is_censored():
    rng = np.random.default_rng(4)
    sweeps = simulate_audit(
        {"baseline": SweepModel(), "top": breaking_at_top(SweepModel(), 2)}, 2, rng
    )
    assert measure(sweeps["baseline"]).censored  # never broke: "≥ the top rate"
    top = measure(sweeps["top"])
    assert not top.censored and top.largest_stable_lr == LRS[-3]


def _depth_runs(arm: str, deep_breaks: bool, rng: np.random.Generator) -> list[SweepRun]:
    """Runs at one rate and 2, 4, 8 layers; the deeper ones break when `deep_breaks`."""
    runs = []
    for layers in (2, 4, 8):
        for seed in range(3):
            broke = deep_breaks and layers > 2
            level = float(rng.normal(0.0, 0.1))
            loss = None if broke else 2.0 + float(rng.normal(0.0, 0.1))
            runs.append(
                SweepRun(arm, 0.03, seed, 5.5, loss, not broke, 1 if broke else None, layers, level)
            )
    return runs


def test_the_depth_verdict_sees_an_arm_that_breaks_deeper():
    rng = np.random.default_rng(8)
    base = _depth_runs("baseline", False, rng)
    runs = {
        "baseline": base,
        "deep": _depth_runs("deep", True, rng),
        "same": [dataclasses.replace(r, arm="same") for r in base],  # ties at every depth
    }
    verdicts = {v.arm: v for v in judge_depth(runs, "baseline", permutations=999)}
    assert verdicts["deep"].verdict == MORE_FRAGILE and verdicts["deep"].unstable_delta == 6
    assert verdicts["same"].verdict == WITHIN_NOISE
    one_seed = {"baseline": runs["baseline"], "x": runs["same"][:1]}
    assert judge_depth(one_seed, "baseline")[0].verdict == NOT_ESTIMABLE


def test_the_smallest_p_is_exact_and_the_permutation_test_cannot_beat_it():
    """Issue 43: 2 seeds per side at 3 high rates split 6³ ways, the observed split and its
    mirror the most extreme: p ≥ 2/216. An arm that broke in every high run reaches it."""
    from archaudit.stats.analyses.fragility import smallest_p
    from archaudit.stats.analyses.stability import undeclarable

    assert smallest_p([(2, 2)] * 3) == pytest.approx(2 / 216)
    broke, fine = (1.0, math.inf, math.inf), (0.0, 3.0, 0.5)
    strata = [Stratum((broke, broke), (fine, (0.0, 3.1, 0.6)), 1 / 3) for _ in range(3)]
    test = fragility_test(strata, permutations=4999)
    assert test.p >= smallest_p([(2, 2)] * 3) * 0.8 and test.direction == 1
    rates = (1 / 3, 1.0, 3.0, 10.0, 30.0, 100.0)
    assert "set stress.seeds = 3" in undeclarable(2, rates, 7, 0.05)
    assert undeclarable(3, rates, 7, 0.05) == "" and undeclarable(2, rates, 1, 0.05) == ""
