"""docs/guides/statistical-test.md: its example test, one file, registered from outside the
package, judges a table, is simulated and is put in words, with no edit of archaudit itself."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from archaudit.errors import ConfigError
from archaudit.stats import AuditDesign, JudgeOptions, judge, simulate_null
from archaudit.stats.judging.judgement_text import header
from archaudit.stats.simulation.power import Design, minimum_detectable_effect, power
from archaudit.stats.tests import STAT_TESTS, statistical_test

GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "statistical-test.md"
SEEDS = {"baseline": [3.30, 3.31, 3.29], "wide": [3.10, 3.30, 3.20], "tight": [3.21, 3.22, 3.20]}


@pytest.fixture
def plain_welch(tmp_path, monkeypatch):
    """The guide's example, imported as a plugin module into a copy of the registry."""
    monkeypatch.setattr(STAT_TESTS, "_items", dict(STAT_TESTS._items))
    source = re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.S).group(1)
    (tmp_path / "my_tests_guide.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_tests_guide", raising=False)
    importlib.import_module("my_tests_guide")
    return statistical_test("plain-welch")


@pytest.fixture
def table(tmp_path):
    rows = ["arm,scale,seed,metric,value"]
    rows += [f"{arm},s,{i},val_loss,{v}" for arm, vs in SEEDS.items() for i, v in enumerate(vs)]
    path = tmp_path / "results.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_the_guides_test_is_unknown_until_its_file_is_imported():
    with pytest.raises(ConfigError, match="unknown statistical test 'plain-welch'"):
        JudgeOptions(test="plain-welch")


def test_a_misspelled_test_is_refused_with_did_you_mean(plain_welch):
    with pytest.raises(ConfigError, match="did you mean 'plain-welch'"):
        JudgeOptions(test="plain-welsh")


def test_the_guides_test_judges_a_table(plain_welch, table):
    judgement = judge(table, "val_loss", JudgeOptions(test="plain-welch"))
    assert judgement.test == "plain-welch"
    for arm in judgement.arms:
        textbook = sps.ttest_ind(SEEDS["baseline"], SEEDS[arm.arm], equal_var=False)
        assert arm.statistic == pytest.approx(textbook.statistic)  # lower loss: Δ > 0
        assert arm.p == pytest.approx(textbook.pvalue)
        assert arm.decided_by["test"] == "plain Welch t"
    default = judge(table, "val_loss")
    assert default.test == "welch" and default.arms[0].p != judgement.arms[0].p


def test_the_guides_test_is_put_in_its_own_words(plain_welch, table):
    judgement = judge(table, "val_loss", JudgeOptions(test="plain-welch"))
    lines = header(judgement)
    assert any(line.startswith("plain Welch t test (each arm's own") for line in lines)
    assert "every arm has >= 2 seeds: one seed has no spread of its own to test" in lines
    assert any("(test or correction uncalibrated)" in line for line in lines)
    assert plain_welch.symbol == "t"
    assert '"test": "plain Welch t"' in json.dumps(judgement.to_dict()["arms"][0]["decided_by"])


def test_the_guides_test_is_simulated(plain_welch):
    options = JudgeOptions(test="plain-welch")
    design = AuditDesign.balanced(2, 3, 3, options)
    assert design.test == "plain-welch" and design.to_dict()["family_test"] == "plain-welch"
    assert "family_test" not in AuditDesign.balanced(2, 3, 3).to_dict()  # default keys kept
    null = simulate_null(design, audits=2000, seed=3)
    assert 0.0 < null.fwer < 0.10  # Welch at α = 0.05, Holm over 2 arms: about α
    arm = Design(3, 3, n_arms=2, family_test="plain-welch")
    mde = minimum_detectable_effect(arm)
    assert power(mde, arm) == pytest.approx(0.8, abs=1e-3)
    assert mde > minimum_detectable_effect(Design(3, 3, n_arms=2, family_test="welch"))
    effects = np.array([0.0, 2.0, 6.0, 12.0])
    assert np.all(np.diff([power(e, arm) for e in effects]) > 0)
