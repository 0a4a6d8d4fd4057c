"""Issue 36, item 4 (stats side): the `--noise` grammar has ranges, a simulation has a named
memory limit, a CSV cut mid-value or written with `1_000` is refused, the baseline cannot be
excluded, and a family with no arm to judge is an error, not an empty table."""

from __future__ import annotations

from pathlib import Path

import pytest

from archaudit.errors import ArchauditError, ConfigError
from archaudit.stats import AuditDesign, judge, load_table, simulate_null
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.judging.family import no_arm_to_judge
from archaudit.stats.records.noise_panel import parse_one
from archaudit.stats.simulation.sequential import simulate_sequential

HEADER = "arm,scale,seed,metric,value\n"


@pytest.mark.parametrize(
    "spec", ["lognormal:800", "lognormal:inf", "lognormal:nan", "hetero:1e308", "hetero:nan",
             "hetero:6:2.5", "hetero:6:0", "hetero:0.001"],
)  # fmt: skip
def test_noise_values_outside_their_range_are_refused(spec: str) -> None:
    with pytest.raises(ConfigError, match="bad noise"):
        parse_one(spec)


def test_more_wide_arms_than_the_design_has_are_refused_not_clamped() -> None:
    design = AuditDesign.balanced(19, 3, None, JudgeOptions())
    with pytest.raises(ConfigError, match="100 wide arms, but the design has 18 arms"):
        simulate_null(design, audits=10, noise="hetero:6:100", effect=1.0, effect_arms=1)
    assert simulate_null(design, audits=10, noise="hetero:6:19").audits == 10


@pytest.mark.parametrize(("effect", "seed"), [(float("nan"), 0), (float("inf"), 0), (1e3, 0),
                                              (1.0, -1)])  # fmt: skip
def test_effect_and_seed_are_checked(effect: float, seed: int) -> None:
    design = AuditDesign.balanced(3, 3, None, JudgeOptions())
    with pytest.raises(ConfigError, match=r"--effect|--seed"):
        simulate_null(design, audits=10, effect=effect, effect_arms=1, seed=seed)


def test_the_memory_limit_is_named_before_anything_is_drawn() -> None:
    design = AuditDesign.balanced(100_000_000, 3, None, JudgeOptions())
    with pytest.raises(ConfigError, match=r"GiB in memory, over its limit of 2 GiB \(archaudit"):
        simulate_null(design, audits=10)
    with pytest.raises(ConfigError, match="MEMORY_LIMIT"):
        simulate_sequential(arms=100_000_000, audits=10)


@pytest.mark.parametrize(
    ("text", "match"),
    [(HEADER + "baseline,s,0,acc,0.51\nbaseline,s,1,acc,0.5", "ends without a line break"),
     (HEADER + "baseline,s,0,acc,1_000\n", "is not a number"),
     (HEADER + 'baseline,s,0,acc,"0.5\n', "not valid CSV")],
)  # fmt: skip
def test_damaged_csv_is_refused(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "r.csv").write_text(text)
    with pytest.raises(ArchauditError, match=match):
        load_table(tmp_path / "r.csv")


def test_the_baseline_cannot_be_excluded() -> None:
    with pytest.raises(ConfigError, match="the baseline cannot be excluded"):
        JudgeOptions(exclude=("baseline",))


def test_a_family_without_arms_names_the_arms_of_the_other_scale(tmp_path: Path) -> None:
    rows = [f"baseline,133K,{s},acc,0.5{s}\n" for s in range(3)]
    rows += [f"qk_norm,134K,{s},acc,0.6{s}\n" for s in range(2)]
    (tmp_path / "r.csv").write_text(HEADER + "".join(rows))
    table, options = load_table(tmp_path / "r.csv"), JudgeOptions(scale="133K")
    assert judge(table, "acc", options).arms == ()
    assert "other scales hold qk_norm at 134K" in str(no_arm_to_judge(table, options))
