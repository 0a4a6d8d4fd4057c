"""Issue 44: the Markdown twin owns its figures and nothing else. It lists what it wrote (name →
SHA-256) in figures.json; a rerun replaces only those, unchanged since; a user's file in the
folder, or a figure the user edited, stops it before anything is written. Figure names are one
per (metric, scale) however the names look."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from archaudit.errors import DataError
from archaudit.report.sections import slug

pytest.importorskip("matplotlib")


def results(tmp_path: Path, scales: tuple[str, ...] = ("xs",)) -> Path:
    rows = ["arm,scale,seed,metric,value"]
    for n, arm in enumerate(("baseline", "qk_norm", "post_ln")):
        rows += [
            f"{arm},{scale},{seed},val_loss,{3 + seed / 10 + n / 50 + k / 7}"
            for k, scale in enumerate(scales)
            for seed in range(3)
        ]
    path = tmp_path / "results.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_rerun_replaces_only_what_the_twin_wrote(tmp_path: Path) -> None:
    from archaudit.report import write_report

    source = results(tmp_path)
    twin = tmp_path / "rep.md"
    write_report(source, tmp_path / "rep.html", markdown=twin)
    figures = tmp_path / "rep_files"
    listed = json.loads((figures / "figures.json").read_text())
    assert listed and set(listed) == {p.name for p in figures.glob("*.svg")}
    write_report(source, tmp_path / "rep.html", markdown=twin)  # ours: replaced silently
    name = sorted(listed)[0]
    (figures / name).write_text("<svg>the user's own drawing</svg>")
    said = re.escape(f"{name} is not a figure an earlier report wrote")
    with pytest.raises(DataError, match=said):
        write_report(source, tmp_path / "rep.html", markdown=twin)
    assert (figures / name).read_text() == "<svg>the user's own drawing</svg>"
    (figures / name).unlink()
    (figures / "notes.svg").write_text("<svg/>")
    with pytest.raises(DataError, match=r"notes\.svg is not a figure"):
        write_report(source, tmp_path / "rep.html", markdown=twin)


def test_names_that_look_alike_get_their_own_figure_files(tmp_path: Path) -> None:
    assert len({slug("x.1"), slug("x_1"), slug("a/b"), slug("a_b")}) == 4
    assert slug("val_loss") == "val_loss"  # a name that is already safe keeps its file name
    from archaudit.report import write_report

    write_report(results(tmp_path, ("x.1", "x_1")), tmp_path / "r.html", markdown=tmp_path / "r.md")
    forests = sorted(p.name for p in (tmp_path / "r_files").glob("forest-*"))
    assert len(forests) == 2, forests
