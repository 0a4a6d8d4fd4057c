"""Issue 53, must-show 3: null tables that the moderation let through (they printed a regressor
before the protected moderated Welch t), and the verdicts of uncalibrated corrections.

Both tables are pure noise: the first is 2 arms × 2 seeds against 3, its arm a01 drawn 20× as
wide as the rest (its two seeds happened to land close together, far from 0); the second is
19 arms × 3 seeds against a baseline drawn alone 6× as wide (its mean landed 5σ of the arms
above theirs). Each printed `regressor` on the code before issue 53 (found by judging seeded
draws of those models; one of many such tables).
"""

import json

import numpy as np

from archaudit.stats import judge
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.judging.judgement_text import header
from archaudit.stats.records.verdicts import SIGNIFICANT

WIDE_ARM = {"baseline": [-0.7111, -0.1815, -0.5776], "a00": [-0.157, 1.0231]}
WIDE_ARM["a01"] = [-12.5591, -10.4494]
WIDE_BASELINE = {"baseline": [4.3683, 7.1813, 4.2872]}
WIDE_BASELINE |= {
    f"a{k:02d}": list(v)
    for k, v in enumerate(
        [
            *np.array(
                [
                    [-0.0717, 0.683, 1.1572, 0.7791, 2.3718, -0.3852, -0.141, 0.9449, 0.6704],
                    [-0.0993, -0.4017, 0.1049, -0.0799, 0.2543, -1.6538, 0.2566, -1.3337, -0.2012],
                    [0.2139, -0.8582, -0.5246, -0.9356, 0.8096, -0.9346, 1.3049, 0.1607, 1.5968],
                    [-1.1572, 0.5615, -0.3584, -0.8911, 1.067, 0.1008, -1.3078, 0.5503, 0.55],
                    [-1.4928, 0.73, 1.0714, -1.3912, -1.9168, 0.1891, -0.7854, 0.301, -1.2089],
                    [-1.5622, 0.2583, -1.1999, -1.5341, -0.2234, 0.056, -1.4227, -1.1479, 0.9197],
                ]
            )
            .reshape(-1, 3)
            .tolist(),
            [0.2395, 0.3873, -1.3982],
        ]
    )
}


def test_the_tables_are_the_designs_they_claim():
    assert len(WIDE_BASELINE) == 20 and all(len(v) == 3 for v in WIDE_BASELINE.values())


def test_a_null_table_with_one_20x_wide_two_seed_arm_declares_nothing(make_table):
    judgement = judge(make_table(WIDE_ARM), "acc")
    assert judgement.test == "welch"
    verdicts = {a.arm: a.verdict for a in judgement.arms}
    assert verdicts["a01"] == "nominal-regressor"
    assert not set(verdicts.values()) & set(SIGNIFICANT)


def test_a_null_table_with_a_6x_wide_baseline_declares_nothing(make_table):
    judgement = judge(make_table(WIDE_BASELINE), "acc")
    verdicts = [a.verdict for a in judgement.arms]
    assert "nominal-regressor" in verdicts and not set(verdicts) & set(SIGNIFICANT)
    assert judgement.baseline_ratio > 1  # the header sees the baseline's width (1.7× here)
    assert any("baseline" in line and "× the rest" in line for line in header(judgement))


def test_the_baseline_keeps_its_own_variance_and_the_arm_its_own_spread(make_table):
    """The mechanism: the wide arm's d₀ falls (its spread is improbable under the other
    groups' pool), and the wide baseline's squared SE is at least its own variance / n₀."""
    arm = judge(make_table(WIDE_ARM), "acc").arm("a01")
    assert arm.prior_df[0] < 2.0
    base = np.var(WIDE_BASELINE["baseline"], ddof=1) / 3
    first = judge(make_table(WIDE_BASELINE), "acc").arms[0]
    assert first.se**2 >= base


def test_the_json_marks_the_statistic_that_decided(make_table):
    document = json.loads(judge(make_table(WIDE_ARM), "acc").to_json())
    decided = {a["arm"]: a["decided_by"] for a in document["arms"]}["a01"]
    assert decided["test"] == "moderated Welch t"
    arm = {a["arm"]: a for a in document["arms"]}["a01"]
    assert (decided["statistic"], decided["df"], decided["p"]) == (
        arm["statistic"],
        arm["statistic_df"],
        arm["p"],
    )
    assert decided["p"] != arm["p_welch"]  # plain Welch's pair is shown, but did not decide


def test_the_console_names_the_moderated_test_and_its_prior_weights(make_table):
    lines = header(judge(make_table(WIDE_ARM), "acc"))
    assert any(line.startswith("moderated Welch t test") and "d₀" in line for line in lines)


def test_bh_and_none_declare_nothing_and_say_why(make_table):
    far = {"baseline": [0.0, 0.1, -0.1], "a": [10.0, 10.1, 9.9], "b": [-10.0, -10.1, -9.9]}
    assert {a.verdict for a in judge(make_table(far), "acc").arms} == set(SIGNIFICANT)
    for correction in ("bh", "none"):
        judgement = judge(make_table(far), "acc", JudgeOptions(correction=correction))
        verdicts = {a.verdict for a in judgement.arms}
        assert verdicts == {"nominal-improver", "nominal-regressor"}
        assert any(f"--correction {correction} is not calibrated" in n for n in judgement.notes)
        assert not any("≤ α while" in line for line in header(judgement))
