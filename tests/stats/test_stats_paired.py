"""Item-level statistics against statsmodels, and the paired comparison of two arms."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar as statsmodels_mcnemar
from statsmodels.stats.proportion import proportion_confint

from archaudit.stats import compare_items, load_items, mcnemar, paired_bootstrap, wilson_interval
from archaudit.stats.errors import DesignError, DuplicateRowError, UnknownNameError


@given(n=st.integers(1, 500), data=st.data())
def test_wilson_matches_statsmodels(n, data):
    k = data.draw(st.integers(0, n))
    low, high = wilson_interval(k, n)
    expected = proportion_confint(k, n, method="wilson")
    assert (low, high) == pytest.approx(expected, abs=1e-12)
    assert high - low > 0  # never zero-width, even at 0 % or 100 %


@settings(max_examples=100, deadline=None)
@given(pairs=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=200))
def test_mcnemar_matches_statsmodels_exact(pairs):
    a, b = (np.array(side) for side in zip(*pairs, strict=True))
    table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
    result = mcnemar(a, b)
    assert result.only_a == table[0][1] and result.only_b == table[1][0]
    assert result.p == pytest.approx(statsmodels_mcnemar(table, exact=True).pvalue, rel=1e-9)


def test_paired_bootstrap_is_reproducible_and_centred():
    rng = np.random.default_rng(0)
    a = (rng.random(400) < 0.7).astype(float)
    b = np.where(rng.random(400) < 0.9, a, 1 - a)  # mostly the same answers: strong pairing
    first = paired_bootstrap(a, b, n_boot=1000, seed=3)
    assert paired_bootstrap(a, b, n_boot=1000, seed=3) == first
    assert paired_bootstrap(a, b, n_boot=1000, seed=4) != first
    assert first.difference == pytest.approx(a.mean() - b.mean())
    assert first.low < first.difference < first.high
    # The bootstrap SE of a mean of paired differences is close to sd(d)/√n.
    d = a - b
    assert first.se == pytest.approx(np.std(d, ddof=1) / np.sqrt(len(d)), rel=0.15)


def test_paired_bootstrap_detects_a_clear_difference():
    rng = np.random.default_rng(1)
    b = (rng.random(500) < 0.5).astype(float)
    a = np.maximum(b, rng.random(500) < 0.3)
    assert paired_bootstrap(a, b, n_boot=1000, seed=0).p < 0.01


@pytest.fixture
def items_csv(write_csv):
    rng = np.random.default_rng(2)
    truth = rng.random(300)
    rows = [["arm", "scale", "seed", "task", "item", "correct"]]
    for arm, skill, seeds in (("baseline", 0.5, 3), ("better", 0.65, 2), ("single", 0.5, 1)):
        for seed in range(seeds):
            noise = rng.normal(0, 0.05, truth.size)
            for index, difficulty in enumerate(truth):
                task = "easy" if index % 2 else "hard"
                rows.append([arm, "d6", seed, task, index, int(difficulty + noise[index] < skill)])
    return write_csv(rows, name="items.csv")


def test_compare_items_splits_item_and_seed_uncertainty(items_csv):
    items = load_items(items_csv.parent)
    result = compare_items(items, "better", "baseline", "d6", n_boot=500, seed=0)
    assert result.n_items == 300
    assert result.difference.low > 0
    assert len(result.arm_runs) == 2 and len(result.baseline_runs) == 3
    assert len(result.mcnemar) == 2
    arm_acc = [run.accuracy for run in result.arm_runs]
    base_acc = [run.accuracy for run in result.baseline_runs]
    expected_seed_se = np.sqrt(np.var(arm_acc, ddof=1) / 2 + np.var(base_acc, ddof=1) / 3)
    assert result.se_seeds == pytest.approx(expected_seed_se)
    assert result.se_items == result.difference.se
    one_task = compare_items(items, "better", "baseline", "d6", task="easy", n_boot=200)
    assert one_task.n_items == 150
    assert np.isnan(compare_items(items, "single", "baseline", "d6", n_boot=200).se_seeds)


def test_item_errors(items_csv, write_csv):
    items = load_items(items_csv)
    with pytest.raises(UnknownNameError, match="did you mean 'better'"):
        compare_items(items, "beter", "baseline", "d6")
    with pytest.raises(DesignError, match="share no items"):
        compare_items(items, "better", "baseline", "d12")
    header = ["arm", "scale", "seed", "task", "item", "correct"]
    duplicate = write_csv(
        [header, ["a", "s", 0, "t", 1, 1], ["a", "s", 0, "t", 1, 0]], name="dup.csv"
    )
    with pytest.raises(DuplicateRowError, match=r"dup\.csv:3: .*first at line 2"):
        load_items(duplicate)
    with pytest.raises(Exception, match=r"bad\.csv:2: column 'correct'"):
        load_items(write_csv([header, ["a", "s", 0, "t", 1, "yes"]], name="bad.csv"))
