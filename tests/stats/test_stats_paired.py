"""Item-level statistics against statsmodels, and the paired comparison of two arms."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from statsmodels.stats.contingency_tables import mcnemar as statsmodels_mcnemar
from statsmodels.stats.proportion import proportion_confint

from archaudit.errors import DataError
from archaudit.stats import (
    compare_item_measure,
    compare_items,
    load_items,
    mcnemar,
    paired_bootstrap,
    wilson_interval,
)
from archaudit.stats.inference.paired import paired_t_test, signed_rank_test
from archaudit.stats.records.errors import DesignError, DuplicateRowError, UnknownNameError


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


# Two arms, two seeds each, six items of a choice task and two of a cloze task (no margin).
BPB = {
    ("baseline", 0): [1.10, 0.92, 1.31, 0.85, 1.02, 1.20, 0.70, 0.80],
    ("baseline", 1): [1.06, 0.96, 1.27, 0.91, 1.00, 1.24, 0.72, 0.78],
    ("wide", 0): [1.01, 0.90, 1.18, 0.86, 0.95, 1.09, 0.69, 0.75],
    ("wide", 1): [1.03, 0.85, 1.22, 0.80, 0.97, 1.11, 0.71, 0.77],
}
MARGIN = {key: [round(2.0 - v, 2) for v in values[:6]] + ["", ""] for key, values in BPB.items()}


@pytest.fixture
def measured_csv(write_csv):
    rows = [["arm", "scale", "seed", "task", "item", "correct", "bpb", "margin"]]
    for (arm, seed), values in BPB.items():
        for index, bpb in enumerate(values):
            task = "choice" if index < 6 else "cloze"
            rows.append([arm, "d6", seed, task, index, int(bpb < 1), bpb, MARGIN[arm, seed][index]])
    return write_csv(rows, name="items.csv")


def _seed_mean(table, arm, items):
    return np.mean([np.array(table[arm, seed][items], dtype=float) for seed in (0, 1)], axis=0)


def test_paired_tests_on_bpb_equal_scipy(measured_csv):
    result = compare_item_measure(measured_csv, "wide", "baseline", "d6", "bpb", n_boot=200)
    a, b = _seed_mean(BPB, "wide", slice(None)), _seed_mean(BPB, "baseline", slice(None))
    assert result.n_items == 8
    assert result.arm_mean == pytest.approx(a.mean()) and result.baseline_mean == b.mean()
    # lower bpb is better: Δ is baseline − arm, so the arm's fewer bits are a Δ > 0
    assert result.difference.difference == pytest.approx((b - a).mean())
    assert result.difference.difference > 0
    t = scipy_stats.ttest_rel(b, a)
    assert (result.t_test.statistic, result.t_test.p) == pytest.approx((t.statistic, t.pvalue))
    w = scipy_stats.wilcoxon(b, a)
    assert (result.wilcoxon.statistic, result.wilcoxon.p) == pytest.approx((w.statistic, w.pvalue))
    assert not result.higher_is_better


def test_margin_is_higher_better_and_skips_cloze_items(measured_csv):
    result = compare_item_measure(measured_csv, "wide", "baseline", "d6", "margin", n_boot=200)
    a, b = _seed_mean(MARGIN, "wide", slice(0, 6)), _seed_mean(MARGIN, "baseline", slice(0, 6))
    assert result.n_items == 6  # the cloze items have no margin
    assert result.t_test.p == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue)
    assert result.difference.difference == pytest.approx((a - b).mean())
    assert result.difference.difference > 0
    with pytest.raises(DesignError, match="share no items with a margin"):
        compare_item_measure(measured_csv, "wide", "baseline", "d6", "margin", task="cloze")
    with pytest.raises(UnknownNameError, match="did you mean 'bpb'"):
        compare_item_measure(measured_csv, "wide", "baseline", "d6", "bbp")


def test_old_items_csv_loads_without_measures(items_csv):
    items = load_items(items_csv)
    assert items.measures == () and compare_items(items, "better", "baseline", "d6", n_boot=50)
    with pytest.raises(DataError, match=r"items\.csv: no column 'bpb'") as err:
        compare_item_measure(items, "better", "baseline", "d6", "bpb")
    assert "\n" not in str(err.value)


def test_parquet_twin_keeps_the_measures(measured_csv):
    pytest.importorskip("pyarrow")
    from archaudit.stats.records.frames import parquet_twin

    parquet = parquet_twin(measured_csv, load_items)
    back = load_items(parquet)
    assert back.measures == ("bpb", "margin")
    assert [r.bpb for r in back.results] == [r.bpb for r in load_items(measured_csv).results]
    args = ("wide", "baseline", "d6", "margin")
    assert (
        compare_item_measure(parquet, *args).to_dict()
        == compare_item_measure(measured_csv, *args).to_dict()
    )


def test_identical_arms_give_p_one():
    a = np.array([1.0, 0.5, 0.25, 2.0])
    assert paired_t_test(a, a.copy()).p == 1.0
    assert signed_rank_test(a, a.copy()).p == 1.0
