"""Factorial interactions: a 2×2 design where the least-squares answer has a closed form."""

import pytest

from archaudit.stats import interactions
from archaudit.stats.errors import DesignError
from archaudit.stats.table import Row, Table

NOISE = (-0.01, 0.0, 0.01)
MEANS = {"baseline": 0.50, "qk": 0.55, "gqa": 0.40, "qk+gqa": 0.47}


def factorial(means: dict[str, float]) -> Table:
    return Table(
        tuple(
            Row(arm=arm, scale="s", seed=seed, metric="acc", value=mean + noise)
            for arm, mean in means.items()
            for seed, noise in enumerate(NOISE)
        )
    )


def test_two_by_two_matches_the_closed_form():
    y00, y10, y01, y11 = (MEANS[arm] for arm in ("baseline", "qk", "gqa", "qk+gqa"))
    result = interactions(factorial(MEANS), "acc")
    # In a 2×2 design the additive fit leaves residuals ±I/4, I = y11 − y10 − y01 + y00.
    quarter = (y11 - y10 - y01 + y00) / 4
    by_arm = {c.arm: c for c in result.combinations}
    assert by_arm["qk+gqa"].interaction == pytest.approx(quarter)
    assert by_arm["baseline"].interaction == pytest.approx(quarter)
    assert by_arm["qk"].interaction == pytest.approx(-quarter)
    assert by_arm["qk+gqa"].predicted == pytest.approx(y11 - quarter)
    assert by_arm["qk+gqa"].interaction_sigmas == pytest.approx(quarter / 0.01)
    assert result.main_effects["qk"] == pytest.approx(((y10 - y00) + (y11 - y01)) / 2)
    assert result.main_effects["gqa"] == pytest.approx(((y01 - y00) + (y11 - y10)) / 2)
    assert result.harmful == ("gqa",)
    mean = (y00 + y10 + y01 + y11) / 4
    total = sum((y - mean) ** 2 for y in (y00, y10, y01, y11))
    assert result.r2_additive == pytest.approx(1 - 4 * quarter**2 / total)
    # Harmful count 0 for {baseline, qk}, 1 for {gqa, qk+gqa}: the fit is the group means.
    within = ((y00 - y10) ** 2 + (y01 - y11) ** 2) / 2
    assert result.r2_harmful_count == pytest.approx(1 - within / total)
    assert by_arm["qk+gqa"].harmful_count == 1


def test_lower_is_better_flips_which_choices_are_harmful():
    result = interactions(factorial(MEANS), "acc", lower_is_better=True)
    assert result.harmful == ("qk",)
    by_arm = {c.arm: c for c in result.combinations}
    assert by_arm["qk+gqa"].observed == pytest.approx(MEANS["qk+gqa"])


def test_not_a_factorial_design():
    with pytest.raises(DesignError, match="additive model"):
        interactions(factorial({"baseline": 0.5, "qk": 0.55, "gqa": 0.4}), "acc")
