"""Issue 56 item 1: `stats scaling`, `stats power SOURCE`, `stats items` and `simulate-null
--like` read the findings record (or the library record it is made of) instead of computing
beside it: each prints what `findings(...)` holds, and the report, which asks for every
analysis, does not pay for the slices computed on request only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_stats_scaling import scaling_table

from archaudit.audit.planning.null_design import design_like
from archaudit.audit.results.findings import EVERYTHING, Analysis, Asked, Settings, findings
from archaudit.audit.results.findings_record import ON_REQUEST
from archaudit.stats.analyses.item_pairs import ItemOptions, ItemPairs, pair_items
from archaudit.stats.analyses.scaling import ScalingOptions
from archaudit.stats.choices.options import DEFAULT
from archaudit.stats.records.serialize import to_jsonable

HEADER = ["arm", "scale", "seed", "metric", "value"]


def as_json(value: object) -> object:
    return json.loads(json.dumps(to_jsonable(value), allow_nan=False, default=str))


@pytest.fixture
def scaling_csv(write_csv) -> Path:
    rows = [(r.arm, r.scale, r.seed, r.metric, r.value) for r in scaling_table(0.01).rows]
    return write_csv([HEADER, *rows])


def test_stats_scaling_prints_the_records_fit(cli, scaling_csv):
    code, out, err = cli(f"stats scaling {scaling_csv} --n-boot 8 --seed 3 --json")
    assert code == 0, err
    asked = Asked(
        frozenset({Analysis.SCALING}),
        each_scale=True,
        settings=Settings(scaling=ScalingOptions(n_boot=8, seed=3)),
    )
    found = findings(scaling_csv, ("val_loss",), asked=asked)
    assert found.scaling is not None and json.loads(out) == as_json(found.scaling)


def test_a_fit_that_cannot_be_made_is_absent_with_its_reason(cli, write_csv):
    rows = [HEADER, *[("baseline", "s", seed, "val_loss", 3.0 + seed / 10) for seed in range(3)]]
    path = write_csv(rows)
    asked = Asked(frozenset({Analysis.SCALING}), each_scale=True)
    found = findings(path, ("val_loss",), asked=asked)
    assert found.scaling is None and "params" in (found.why(Analysis.SCALING) or "")
    code, out, err = cli(f"stats scaling {path}")
    assert code == 2 and not out and found.why(Analysis.SCALING) in err, err


def test_the_report_asks_for_no_slice_computed_on_request():
    assert {Analysis.SCALING, Analysis.SEEDING, Analysis.ITEMS} == ON_REQUEST
    assert not ON_REQUEST & EVERYTHING.analyses


def test_stats_power_source_prints_the_records_seeding_advice(cli, write_csv):
    rows = [HEADER]
    for arm, level in {"baseline": 0.5, "a": 0.53, "b": 0.6}.items():
        rows += [(arm, "s", seed, "acc", level + 0.01 * seed) for seed in range(3)]
    path = write_csv(rows)
    code, out, err = cli(f"stats power {path} --metric acc --json")
    assert code == 0, err
    asked = Asked(frozenset({Analysis.VERDICTS, Analysis.SEEDING}), loop=False)
    (advice,) = findings(path, ("acc",), DEFAULT, asked=asked).seeding
    assert json.loads(out) == as_json(advice) and {a["arm"] for a in json.loads(out)["arms"]} == {
        "a",
        "b",
    }


def test_stats_items_prints_the_library_record(cli, write_csv):
    rows = [["arm", "scale", "seed", "task", "item", "correct"]]
    rows += [
        [arm, scale, seed, "t", item, int((item * (seed + 2) + len(arm)) % 3 > 0)]
        for arm in ("baseline", "x")
        for scale in ("s", "m")
        for seed in range(2)
        for item in range(40)
    ]
    path = write_csv(rows, name="items.csv")
    pairs = pair_items(path, ItemOptions(n_boot=50))
    assert sorted(p.scale for p in pairs) == ["m", "s"]
    assert all(isinstance(p, ItemPairs) for p in pairs)
    code, out, err = cli(f"stats items {path} --n-boot 50 --json")
    assert code == 0, err
    assert json.loads(out) == [as_json(list(p.comparisons)) for p in pairs]


def test_an_audit_folders_items_are_a_slice_of_its_findings(write_csv, tmp_path):
    """On an audit folder (its items.csv beside its results), the items are the record's
    `items` slice, paired by the same function."""
    folder = tmp_path / "audit"
    folder.mkdir()
    results = [HEADER] + [
        (arm, "s", seed, "acc", 0.5 + 0.01 * seed + 0.02 * (arm == "x"))
        for arm in ("baseline", "x")
        for seed in range(3)
    ]
    items = [["arm", "scale", "seed", "task", "item", "correct"]] + [
        [arm, "s", seed, "t", item, int((item + seed + len(arm)) % 3 > 0)]
        for arm in ("baseline", "x")
        for seed in range(3)
        for item in range(30)
    ]
    results_csv = write_csv(results, name="results.csv")
    items_csv = write_csv(items, name="items.csv")
    results_csv.rename(folder / "results.csv")
    items_csv.rename(folder / "items.csv")
    options = ItemOptions(n_boot=40)
    asked = Asked(frozenset({Analysis.ITEMS}), settings=Settings(items=options))
    found = findings(folder, (), asked=asked)
    assert found.items and found.items == pair_items(folder, options)


def test_simulate_null_like_a_table_simulates_the_family_stats_judges(cli, write_csv):
    rows = [HEADER]
    for arm, seeds in {"baseline": 4, "a": 2, "b": 3}.items():
        rows += [(arm, "s", seed, "acc", 0.5 + 0.01 * seed) for seed in range(seeds)]
    path = write_csv(rows)
    taken = design_like(path, "acc", DEFAULT)
    assert taken.rule is None and taken.fixed is not None
    assert sorted(taken.fixed.arm_seeds) == [2, 3] and taken.fixed.baseline_seeds == 4
    code, out, err = cli(f"simulate-null --like {path} --metric acc --audits 50 --json")
    assert code == 0, err
    assert sorted(json.loads(out)["design"]["arm_seeds"]) == [2, 3]
