"""The judge's options travel as one `JudgeOptions`: nothing on the judging path redeclares them,
and every record that holds some of them refuses a bad value with the same message."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from archaudit.errors import ConfigError
from archaudit.stats import (
    AuditDesign,
    Design,
    JudgeOptions,
    decoupling,
    design_power,
    family_design,
    judge,
    seeds_needed,
    simulate_null,
)
from archaudit.stats.choices.compare import decide
from archaudit.stats.judging.family import collect_family
from archaudit.stats.judging.grading import grade_arm

OPTION_FIELDS = {field.name for field in dataclasses.fields(JudgeOptions)}
TAKES_OPTIONS = [
    judge,
    collect_family,
    family_design,
    decoupling,
    seeds_needed,
    design_power,
    Design.balanced,
    AuditDesign.balanced,
    AuditDesign.judged_by,
    decide,
    grade_arm,
]


@pytest.mark.parametrize("function", [*TAKES_OPTIONS, simulate_null], ids=lambda f: f.__qualname__)
def test_no_function_on_the_judging_path_redeclares_an_option(function):
    parameters = set(inspect.signature(function).parameters)
    assert not parameters & OPTION_FIELDS, parameters & OPTION_FIELDS
    assert "options" in parameters or "design" in parameters


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"correction": "sidak"}, "unknown correction 'sidak'"),
        ({"reference": "z"}, "unknown reference 'z'"),
        ({"alpha": 1.5}, "alpha must be between 0 and 1"),
        ({"reference": "normal", "correction": "dunnett"}, "dunnett needs the calibrated t"),
    ],
)
def test_options_and_designs_refuse_a_bad_test_alike(changes, message):
    makers = [
        lambda: JudgeOptions(**changes),
        lambda: AuditDesign(arm_seeds=(1,), baseline_seeds=3, **changes),
        lambda: Design(arm_seeds=1, baseline_seeds=3, **changes),
    ]
    for make in makers:
        with pytest.raises(ConfigError, match=message):
            make()


def test_a_balanced_design_is_judged_as_its_options_say():
    options = JudgeOptions(correction="bonferroni", alpha=0.01, equal_variance=True)
    design = AuditDesign.balanced(19, 1, 3, options)
    assert design == AuditDesign(
        (1,) * 19, 3, correction="bonferroni", alpha=0.01, equal_variance=True
    )
    assert design.test == "pooled-t"
    arm = Design.balanced(1, 3, 19, options)
    assert (arm.n_arms, arm.alpha, arm.correction) == (19, 0.01, "bonferroni")
    with pytest.raises(ConfigError, match="--n-arms 0"):
        AuditDesign.balanced(0, 3)


def test_design_power_counts_seeds_at_the_options_power_target():
    low, high = (design_power(3, 19, JudgeOptions(power_target=t), effect=4.0) for t in (0.5, 0.9))
    assert low.target == 0.5 and high.target == 0.9
    assert low.mde_sigmas < high.mde_sigmas
    assert low.seeds_needed is not None and high.seeds_needed is not None
    assert low.seeds_needed <= high.seeds_needed
    assert design_power(3, 19).seeds_needed is None
