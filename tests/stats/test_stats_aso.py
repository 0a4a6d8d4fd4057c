"""Almost stochastic order: our ε_W2 and ε_min against deep-significance's definitions."""

import warnings

import numpy as np
import pytest

from archaudit.stats.inference.aso import almost_stochastic_order, violation_ratio

RNG = np.random.default_rng(11)
FIXTURES = [
    (RNG.normal(shift, 1.0, n), RNG.normal(0.0, 1.0, m))
    for shift, n, m in (
        (0.0, 5, 5),
        (0.3, 3, 3),
        (1.0, 10, 7),
        (-0.5, 4, 6),
    )
]


def test_violation_ratio_extremes():
    low, high = np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.6, 0.7])
    assert violation_ratio(high, low) == 0.0  # A is better everywhere: nothing violated
    assert violation_ratio(low, high) == pytest.approx(198 / 199)  # deepsig skips t = dt on top
    assert violation_ratio(low, low) == 0.5  # no distance at all


def test_eps_min_is_seeded_and_bonferroni_makes_it_stricter():
    a, b = FIXTURES[1]
    first = almost_stochastic_order(a, b, seed=3)
    assert almost_stochastic_order(a, b, seed=3) == first
    assert almost_stochastic_order(a, b, seed=4).eps_min != first.eps_min
    wider = almost_stochastic_order(a, b, seed=3, comparisons=5)
    assert wider.confidence == pytest.approx(0.99)
    assert wider.eps_min >= first.eps_min and wider.eps_min_reverse >= first.eps_min_reverse
    assert first.eps_min >= first.violation_ratio


def test_a_clearly_better_sample_is_almost_stochastically_dominant():
    rng = np.random.default_rng(0)
    better, worse = rng.normal(1.0, 0.2, 10), rng.normal(0.0, 0.2, 10)
    order = almost_stochastic_order(better, worse)
    assert order.eps_min < 0.2 < order.eps_min_reverse


def test_violation_ratio_agrees_with_deepsig():
    """ε_W2 is deterministic: it must match deepsig's to rounding."""
    deepsig = pytest.importorskip("deepsig.aso", reason="deepsig is not installed")
    worst = max(
        abs(float(violation_ratio(a, b)) - deepsig.compute_violation_ratio(a, b, dt=0.005))
        for a, b in FIXTURES
    )
    assert worst < 1e-12


@pytest.mark.slow  # deepsig's bootstrap takes ~30 s on the shared machine
def test_eps_min_agrees_with_deepsig():
    """ε_min matches within the Monte Carlo error of two independent 1,000-replicate bootstraps
    (the sd of each is about 0.01 here)."""
    deepsig = pytest.importorskip("deepsig.aso", reason="deepsig is not installed")
    a, b = FIXTURES[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deepsig warns about its deprecated arguments
        theirs = [
            deepsig.aso(x, y, seed=1, show_progress=False, num_bootstrap_iterations=1000)
            for x, y in ((a, b), (b, a))
        ]
    ours = almost_stochastic_order(a, b, n_boot=1000, seed=1)
    assert ours.eps_min == pytest.approx(theirs[0], abs=0.05)
    assert ours.eps_min_reverse == pytest.approx(theirs[1], abs=0.05)
