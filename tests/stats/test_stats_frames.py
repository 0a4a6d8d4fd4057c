"""DataFrames in and out: the same checks and the same verdicts as the CSV; Parquet round-trips;
the notebook quick start of docs/notebook.md runs as written."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

from archaudit.stats import compare_items, judge, load_items, load_table  # noqa: E402
from archaudit.stats.choices.options import JudgeOptions  # noqa: E402
from archaudit.stats.records.errors import TableError  # noqa: E402
from archaudit.stats.records.frames import parquet_twin  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs" / "notebook.md"


def _frame(scales: tuple[str, ...] = ("s",)) -> pd.DataFrame:
    rng = random.Random(0)
    rows = [
        {
            "arm": arm,
            "scale": scale,
            "seed": seed,
            "metric": "val_loss",
            "value": 3.0 + shift + rng.gauss(0, 0.02),
            "family": family,
        }
        for arm, shift, family in (
            ("baseline", 0, None),
            ("qk_norm", -0.06, "attention-logits"),
            ("swa", 0.0, "structure"),
        )
        for scale in scales
        for seed in range(4)
    ]
    rows.append(
        {
            "arm": "swa",
            "scale": scales[-1],
            "seed": 4,
            "metric": "val_loss",
            "value": math.nan,
            "family": "structure",
        }
    )  # not measured → incomplete
    return pd.DataFrame(rows)


def _items() -> pd.DataFrame:
    rng = random.Random(1)
    return pd.DataFrame(
        {
            "arm": arm,
            "scale": "s",
            "seed": seed,
            "task": "t",
            "item": str(i),
            "correct": int(rng.random() < p),
        }
        for arm, p in (("baseline", 0.5), ("qk_norm", 0.8))
        for seed in range(2)
        for i in range(60)
    )


def _without_source(result) -> dict:  # type: ignore[no-untyped-def]
    document = result.to_dict()
    document.pop("source")
    return document


def test_judge_of_a_dataframe_equals_judge_of_the_same_csv(tmp_path: Path) -> None:
    df = _frame(("s", "m"))
    df.to_csv(tmp_path / "results.csv", index=False)
    for scale in ("s", "m"):
        ours = judge(df, "val_loss", JudgeOptions(scale=scale))
        from_csv = judge(tmp_path / "results.csv", "val_loss", JudgeOptions(scale=scale))
        assert _without_source(ours) == _without_source(from_csv)
    assert judge(df, "val_loss", JudgeOptions(scale="s")).arm("qk_norm").verdict == "improver"
    frame = judge(df, "val_loss", JudgeOptions(scale="s")).to_frame()
    assert list(frame["arm"]) == ["qk_norm", "swa"] and "design.fwer" not in frame.columns


def test_a_bad_cell_is_named_by_its_row() -> None:
    df = _frame()
    df["seed"] = df["seed"].astype(object)
    df.loc[3, "seed"] = "three"
    with pytest.raises(TableError, match=r"<DataFrame>:5.*seed"):
        judge(df, "val_loss")
    with pytest.raises(TableError, match="unknown column 'vlaue'"):
        judge(df.rename(columns={"value": "vlaue"}), "val_loss")


def test_parquet_round_trips_results_and_items(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    df, items = _frame(), _items()
    df.to_csv(tmp_path / "results.csv", index=False)
    items.to_csv(tmp_path / "items.csv", index=False)
    results_parquet = parquet_twin(tmp_path / "results.csv", load_table)
    items_parquet = parquet_twin(tmp_path / "items.csv", load_items)
    assert results_parquet == tmp_path / "results.parquet"
    assert load_table(results_parquet).rows == load_table(df).rows  # lines: header = line 1
    assert _without_source(judge(results_parquet, "val_loss")) == _without_source(
        judge(df, "val_loss")
    )
    back = load_items(items_parquet)
    assert back.results == load_items(items).results
    assert load_table(df).to_frame().equals(pd.read_parquet(results_parquet))
    paired = compare_items(items_parquet, "qk_norm", "baseline", "s")
    assert (
        paired.to_dict()
        == compare_items(tmp_path / "items.csv", "qk_norm", "baseline", "s").to_dict()
    )


def test_notebook_quick_start_runs_as_written(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    block = re.search(r"## Quick start\n\n```python\n(.*?)```", DOCS.read_text(), re.S)
    assert block is not None and len(block[1].strip().splitlines()) <= 10
    _frame().to_csv(tmp_path / "results.csv", index=False)
    monkeypatch.chdir(tmp_path)
    shown: list = []
    namespace: dict = {}
    lines = block[1].strip().splitlines()
    # A notebook displays each cell's last expression: run the lines, keep the last value.
    exec("\n".join(lines[:-1]), namespace)
    shown.append(eval(lines[-1].split("#")[0], namespace))
    verdict_table = eval(lines[-2].split("#")[0], namespace)
    assert list(verdict_table["verdict"]) == ["improver", "incomplete"]
    html = shown[0]._repr_html_()
    assert html.startswith("<!DOCTYPE html>") and "qk_norm" in html


def _write_many(path: str) -> None:
    import pandas as pd

    from archaudit.stats.records.frames import write_parquet

    frame = pd.DataFrame({"arm": ["a", "b"], "value": [1.0, 2.0]})
    for _ in range(40):
        write_parquet(frame, Path(path))


def test_concurrent_parquet_writers_never_share_a_temporary(tmp_path: Path) -> None:
    """Issue 36: a fixed temporary name made two `status` loops fail; each writer's is unique."""
    import multiprocessing

    pytest.importorskip("pyarrow")
    path = str(tmp_path / "results.parquet")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_write_many, args=(path,)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.parquet"]


def test_parquet_columns_are_typed_as_in_the_csv_also_when_empty(tmp_path: Path) -> None:
    """Issue 44: results.parquet stored `step` (and `family`) as Parquet `null` when no run had
    one. Every column has its declared type, and the frames round-trip equal."""
    pq = pytest.importorskip("pyarrow.parquet")
    from archaudit.stats.inference.items import ITEM_DTYPES
    from archaudit.stats.records.table import RESULT_DTYPES

    frame = _frame().drop(columns=["family"])
    frame.to_csv(tmp_path / "results.csv", index=False)
    _items().to_csv(tmp_path / "items.csv", index=False)
    for name, load, dtypes in (
        ("results", load_table, RESULT_DTYPES),
        ("items", load_items, ITEM_DTYPES),
    ):
        path = parquet_twin(tmp_path / f"{name}.csv", load)
        assert path is not None
        schema = pq.read_schema(path)
        assert not [f.name for f in schema if str(f.type) == "null"], schema
        back = pd.read_parquet(path)
        assert {c: str(t) for c, t in back.dtypes.items() if c in dtypes} == dtypes
        pd.testing.assert_frame_equal(load(tmp_path / f"{name}.csv").to_frame(), back)


def test_a_judgements_frame_is_typed_and_round_trips_through_parquet(tmp_path: Path) -> None:
    """Issue 57: `to_frame()` kept 11 object columns (a field None in every arm: family,
    diverged_step, loop, at_target, paper_verdict, stopped) and six list columns came back from
    Parquet as numpy arrays. Now only the list columns are objects, each cell a list, and
    to_frame → Parquet → `read_parquet` is equal."""
    pytest.importorskip("pyarrow")
    from archaudit.stats.records.frames import read_parquet, write_parquet

    frame = judge(_frame(), "val_loss", JudgeOptions(scale="s")).to_frame()
    objects = [c for c in frame.columns if frame[c].dtype == object]
    lists = ["interval", "grade_missing", "owed", "outliers", "seed_deltas", "prior_df"]
    assert objects == [*lists, "caveats", "decided_by.prior_df"]
    assert all(isinstance(v, list) for c in [*lists, "caveats"] for v in frame[c])
    assert str(frame["diverged_step"].dtype) == "Int64" and "loop.seeds" in frame.columns
    assert str(frame["paper_verdict"].dtype) == "string"
    back = read_parquet(write_parquet(frame, tmp_path / "judgement.parquet"))
    assert frame.equals(back)
    assert back["interval"].iloc[0] == frame["interval"].iloc[0]
