"""Dunnett's many-to-one step-down: the first step is scipy.stats.dunnett's single step, and the
step-down rejects at least what Holm rejects on the same t statistics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from archaudit.stats import judge
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.inference.corrections import adjust_pvalues
from archaudit.stats.inference.dunnett import critical_value, dunnett_stepdown, max_t_tail


@pytest.mark.parametrize("seed", range(4))
def test_first_step_is_scipy_dunnett(seed):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=4)
    arms = [rng.normal(effect, 1.0, 3) for effect in (0.0, 1.5, 3.0, 0.3, -2.0)]
    expected = stats.dunnett(*arms, control=base, random_state=1)
    groups = [base, *arms]
    dof = sum(len(g) - 1 for g in groups)
    sigma = np.sqrt(sum(((g - g.mean()) ** 2).sum() for g in groups) / dof)
    t = np.array([(a.mean() - base.mean()) / (sigma * np.sqrt(1 / 3 + 1 / 4)) for a in arms])
    np.testing.assert_allclose(t, expected.statistic, rtol=1e-10)
    ours = [max_t_tail(abs(x), [3] * 5, 4, dof) for x in t]
    np.testing.assert_allclose(ours, expected.pvalue, atol=2e-4)
    stepped = dunnett_stepdown(t, [3] * 5, 4, dof)
    assert np.all(stepped <= np.array(ours) + 1e-12)  # step-down never loses to single step
    assert np.argmin(stepped) == np.argmax(np.abs(t))


def test_critical_value_holds_alpha_and_beats_bonferroni():
    c = critical_value(0.05, [1] * 19, 3, 2)
    assert max_t_tail(c, [1] * 19, 3, 2) == pytest.approx(0.05, abs=1e-6)
    assert c < stats.t.isf(0.05 / 19 / 2, 2)  # the shared baseline makes max |t| less extreme


@pytest.mark.slow  # 28 s: judges many random tables, each calibrated for Dunnett and for Holm
def test_judge_with_dunnett_is_at_least_as_powerful_as_holm(make_table):
    values = {"baseline": [0.0, 1.0, -1.0, 0.5], "a": [4.1, 4.4], "b": [3.0, 2.6], "c": [0.3]}
    holm = judge(make_table(values), "acc", JudgeOptions(correction="holm", equal_variance=True))
    dunnett = judge(
        make_table(values), "acc", JudgeOptions(correction="dunnett", equal_variance=True)
    )
    assert dunnett.test == "pooled-t"
    # the default: Dunnett's step-down over the robust tests' p-values
    assert judge(make_table(values), "acc", JudgeOptions(correction="dunnett")).test == "robust"
    for arm in "abc":
        assert dunnett.arm(arm).p == pytest.approx(holm.arm(arm).p)
        assert dunnett.arm(arm).p_adj <= holm.arm(arm).p_adj + 1e-9
    p = [holm.arm(a).p for a in "abc"]
    np.testing.assert_allclose([holm.arm(a).p_adj for a in "abc"], adjust_pvalues(p, "holm"))
