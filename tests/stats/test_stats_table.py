"""Loading results tables; must-show 4 and 5: every bad CSV gives one named error with its row."""

from __future__ import annotations

import csv
import io
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from archaudit.errors import ArchauditError, DataError
from archaudit.stats import judge, load_table
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.records.errors import (
    BadValueError,
    DuplicateRowError,
    EmptyTableError,
    InconsistentArmError,
    MissingColumnError,
    TableError,
    TooFewSeedsError,
    UnknownColumnError,
    UnknownNameError,
    ZeroNoiseError,
)
from archaudit.stats.records.table import order_scales

HEADER = ["arm", "scale", "seed", "metric", "value", "family", "status", "step", "tuned"]


def valid_rows() -> list[list[str]]:
    """Three arms × three seeds at one scale, every optional column used."""
    rows = []
    for arm, family, shift in (
        ("baseline", "", 0.0),
        ("qk_norm", "norm", 0.01),
        ("gated", "attention-output", -0.02),
    ):
        for seed in range(3):
            rows.append(
                [
                    arm,
                    "d6",
                    str(seed),
                    "acc",
                    f"{0.5 + shift + 0.003 * seed:.4f}",
                    family,
                    "ok",
                    "",
                    "false",
                ]
            )
    return rows


def to_csv(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def test_valid_csv_loads_with_lines_and_optional_columns(write_csv):
    rows = valid_rows()
    rows[4][6:8] = ["diverged", "1200"]
    rows[4][4] = ""
    table = load_table(write_csv([HEADER, *rows]))
    assert table.arms == ("baseline", "qk_norm", "gated")
    assert [row.line for row in table.rows] == list(range(2, 11))
    assert table.family("gated") == "attention-output"
    assert table.runs("qk_norm", "d6")[1].diverged
    assert table.runs("qk_norm", "d6")[1].step == 1200
    assert math.isnan(table.rows[4].value)


def test_directory_reads_results_csv(tmp_path, write_csv):
    write_csv([HEADER, *valid_rows()])
    assert load_table(tmp_path).rows == load_table(tmp_path / "results.csv").rows


def test_directory_without_results_csv(tmp_path):
    (tmp_path / "audit").mkdir()
    with pytest.raises(TableError, match=r"audit: has no results\.csv"):
        load_table(tmp_path / "audit")


def test_scales_are_ordered_by_size():
    assert order_scales(("d12", "d6", "d24")) == ("d6", "d12", "d24")
    assert order_scales(("1.2B", "125M", "3B")) == ("125M", "1.2B", "3B")
    assert order_scales(("small", "large")) == ("small", "large")


# Must-show 4: each bad CSV raises one named error that names the file and the row.


def test_missing_column(write_csv):
    rows = [[cell for i, cell in enumerate(row) if i != 4] for row in [HEADER, *valid_rows()]]
    with pytest.raises(MissingColumnError, match=r"results\.csv:1: missing column 'value'"):
        load_table(write_csv(rows))


def test_misspelled_column_suggests_the_right_one(write_csv):
    header = [("famly" if cell == "family" else cell) for cell in HEADER]
    with pytest.raises(UnknownColumnError, match="did you mean 'family'"):
        load_table(write_csv([header, *valid_rows()]))


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "0.5x", "n/a", "-Infinity"])
def test_nan_or_text_in_value(write_csv, bad):
    rows = valid_rows()
    rows[5][4] = bad
    with pytest.raises(BadValueError, match=rf"results\.csv:7: column 'value' .*{bad!r}"):
        load_table(write_csv([HEADER, *rows]))


def test_duplicate_rows_name_both_lines(write_csv):
    rows = valid_rows()
    rows.append(list(rows[2]))
    with pytest.raises(DuplicateRowError, match=r"results\.csv:11: .*first at .*results\.csv:4\)"):
        load_table(write_csv([HEADER, *rows]))


def test_unknown_baseline_with_close_match(write_csv):
    table = load_table(write_csv([HEADER, *valid_rows()]))
    with pytest.raises(UnknownNameError, match=r"baseline 'basline'.*did you mean 'baseline'"):
        judge(table, "acc", JudgeOptions(baseline="basline"))


def test_baseline_with_fewer_than_two_seeds_names_its_row(write_csv):
    rows = [row for row in valid_rows() if not (row[0] == "baseline" and row[2] != "0")]
    with pytest.raises(TooFewSeedsError, match=r"results\.csv:2: baseline 'baseline' has 1"):
        judge(load_table(write_csv([HEADER, *rows])), "acc")


def test_identical_baseline_seeds_are_a_zero_noise_error(make_table):
    with pytest.raises(ZeroNoiseError, match="noise floor is zero"):
        judge(make_table({"baseline": [0.5, 0.5, 0.5], "a": [0.6]}), "acc")


@pytest.mark.parametrize(
    ("column", "bad", "error"),
    [
        ("seed", "1.5", BadValueError),
        ("seed", "-1", BadValueError),
        ("status", "divergd", BadValueError),
        ("tuned", "maybe", BadValueError),
        ("step", "x", BadValueError),
        ("arm", "", BadValueError),
        ("family", "residual", InconsistentArmError),
    ],
)
def test_bad_cells(write_csv, column, bad, error):
    rows = valid_rows()
    rows[4][HEADER.index(column)] = bad
    with pytest.raises(error, match=r"results\.csv:6: "):
        load_table(write_csv([HEADER, *rows]))


def test_unknown_status_suggests_the_right_one(write_csv):
    rows = valid_rows()
    rows[0][6] = "divergd"
    with pytest.raises(BadValueError, match="did you mean 'diverged'"):
        load_table(write_csv([HEADER, *rows]))


def test_empty_and_header_only_files(write_csv):
    with pytest.raises(EmptyTableError, match="empty"):
        load_table(write_csv([]))
    with pytest.raises(EmptyTableError, match="no data rows"):
        load_table(write_csv([HEADER]))


def test_missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="cannot be read"):
        load_table(tmp_path / "nope.csv")


# Must-show 5: generated malformed CSVs always give a named error, never a traceback.

ROW_MUTATIONS = (
    "value",
    "seed",
    "status",
    "tuned",
    "step",
    "empty_cell",
    "fields",
    "duplicate",
    "family",
)
FILE_MUTATIONS = (
    "drop_column",
    "rename_column",
    "repeat_column",
    "empty",
    "header_only",
    "not_utf8",
    "nul",
)
garbage = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"),
    min_size=1,
    max_size=12,
)


def is_finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text.strip()))
    except ValueError:
        return False


@st.composite
def malformed_csv(draw: st.DrawFn) -> tuple[bytes, int | None]:
    """A CSV with one defect, and the line the error must name (None: the whole file)."""
    rows = valid_rows()
    kind = draw(st.sampled_from(ROW_MUTATIONS + FILE_MUTATIONS))
    event(kind)
    index = draw(st.integers(0, len(rows) - 1))
    line: int | None = index + 2
    header = list(HEADER)
    if kind == "value":
        rows[index][4] = draw(
            garbage.filter(lambda s: s.strip() and not is_finite_number(s))
            | st.sampled_from(["nan", "inf", "-inf", "NaN"])
        )
    elif kind in ("seed", "step"):
        rows[index][HEADER.index(kind)] = draw(
            garbage.filter(
                lambda s: (
                    not (s.strip().isascii() and s.strip().isdigit())
                    and (kind == "seed" or s.strip())
                )
            )
        )
    elif kind in ("status", "tuned"):
        allowed = {
            "status": {"", "ok", "diverged"},
            "tuned": {"", "true", "false", "1", "0", "yes", "no"},
        }[kind]
        rows[index][HEADER.index(kind)] = draw(
            garbage.filter(lambda s: s.strip().lower() not in allowed and s.strip() not in allowed)
        )
    elif kind == "empty_cell":
        rows[index][draw(st.sampled_from([0, 1, 2, 3]))] = draw(st.sampled_from(["", "  "]))
    elif kind == "fields":
        rows[index] = rows[index][:-1] if draw(st.booleans()) else [*rows[index], "extra"]
    elif kind == "duplicate":
        rows.append(list(rows[index]))
        line = len(rows) + 1
    elif kind == "family":
        rows[index][5] = draw(garbage.filter(lambda s: s.strip() != rows[index][5]))
        line = None  # reported on the arm's later row when the first one changed
    elif kind == "drop_column":
        column = draw(st.sampled_from(range(5)))
        header.pop(column)
        rows = [[cell for i, cell in enumerate(row) if i != column] for row in rows]
        line = 1
    elif kind == "rename_column":
        column = draw(st.sampled_from(range(len(header))))
        header[column] = draw(garbage.filter(lambda s: s.strip() not in HEADER))
        line = 1
    elif kind == "repeat_column":
        header.append(draw(st.sampled_from(HEADER)))
        rows = [[*row, row[HEADER.index(header[-1])]] for row in rows]
        line = 1
    text = to_csv([header, *rows]).encode()
    if kind == "empty":
        return draw(st.sampled_from([b"", b"\n", b"  \n\n"])), None
    if kind == "header_only":
        return to_csv([HEADER]).encode(), None
    if kind == "not_utf8":
        cut = draw(st.integers(0, len(text)))
        return text[:cut] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\x80abc"])) + text[
            cut:
        ], None
    if kind == "nul":
        cut = draw(st.integers(0, len(text)))
        return text[:cut] + b"\x00" + text[cut:], None
    return text, line


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=malformed_csv())
def test_malformed_csvs_raise_named_errors(case):
    content, line = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bad.csv"
        path.write_bytes(content)
        with pytest.raises(ArchauditError) as caught:
            table = load_table(path)
            judge(table, "acc")  # a defect the loader allows must still fail here
    error = caught.value
    assert isinstance(error, TableError), type(error)
    assert str(path) in str(error)
    if line is not None:
        assert f"{path}:{line}:" in str(error)


def test_a_ladders_size_columns_are_accepted_and_ignored(tmp_path):
    """Issue 42: one CSV of anyone's runs, with the `params` and `tokens` columns `stats predict`
    reads, is judged by `stats verdicts` as if they were absent."""
    rows = ["baseline,s,0,val_loss,3.0", "baseline,s,1,val_loss,3.1", "x,s,0,val_loss,2.9"]
    plain, sized = tmp_path / "plain.csv", tmp_path / "sized.csv"
    plain.write_text("arm,scale,seed,metric,value\n" + "\n".join(rows) + "\n")
    sized.write_text(
        "arm,scale,seed,metric,value,params,tokens\n"
        + "\n".join(f"{r},100,1000" for r in rows)
        + "\n"
    )
    assert load_table(sized).rows == load_table(plain).rows
