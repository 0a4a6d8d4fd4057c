"""The report's sections: present with their figures when the results hold data for them, and
saying why when they do not; from a results CSV, a tiny audit directory and a running audit."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import fake_audit, write_results

from archaudit.report import Report, build_report, write_report
from archaudit.report.build import write_html, write_markdown
from archaudit.report.figures import Figure
from archaudit.report.sections import SECTIONS, Bullets, Grid, Paragraph, Row, Section

ORDER = (
    "answer",
    "forest",
    "decoupling",
    "aggregates",
    "curves",
    "stability",
    "routing",
    "transfer",
    "target",
    "interactions",
    "power",
    "signal",
    "arms",
    "scope",
    "provenance",
)
WITH_FIGURES = {"forest", "decoupling", "aggregates", "curves", "transfer", "interactions", "power"}


def sections_of(source: Path | Report, **options) -> dict[str, Section]:
    report = source if isinstance(source, Report) else build_report(source, **options)
    # the glossary's Terms close every page (report/terms.py), after the sections of SECTIONS
    assert tuple(s.key for s in report.sections) == (*ORDER, "terms")
    assert len(SECTIONS) == len(ORDER)
    return {s.key: s for s in report.sections}


def figures_of(section: Section) -> list[Figure]:
    """The section's figures, those in rows included."""
    found = []
    for block in section.blocks:
        found += block.figures if isinstance(block, Row) else [block]
    return [b for b in found if isinstance(b, Figure)]


def check_present(section: Section) -> None:
    assert section.absent is None, section.absent
    assert section.blocks
    if section.key in WITH_FIGURES:
        assert figures_of(section), f"{section.key} has no figure"
        for figure in figures_of(section):
            assert figure.svg.count("<path") > 10, figure.key


def check_absent(section: Section, *words: str) -> None:
    assert section.blocks == ()
    assert section.absent and all(w in section.absent for w in words), section.absent


def test_csv_report_has_every_section_it_has_data_for(csv_report: Report) -> None:
    sections = sections_of(csv_report)
    for key in ("answer", "forest", "decoupling", "transfer", "power", "signal", "arms", "scope"):
        check_present(sections[key])
    (signal,) = sections["signal"].blocks  # one row per metric × scale, with a seed σ
    assert {row[0] for row in signal.rows} >= {"val_loss", "downstream_avg"}
    check_absent(sections["curves"], "CSV", "training curves")
    check_absent(sections["interactions"], "not factorial")
    check_absent(sections["stability"], "archaudit stress")
    # every tested arm's Δ comes with its interval, which contains Δ
    tested = [a for v in csv_report.data.verdicts for a in v.arms if a.test is not None]
    assert tested and all(a.interval[0] < a.delta < a.interval[1] for a in tested)
    # one bump and power figure per metric; a forest per metric and scale (they stack on a
    # phone), a decoupling figure per scale
    for key in ("transfer", "power"):
        assert [f.key.split("-", 1)[1] for f in figures_of(sections[key])] == [
            "val_loss",
            "downstream_avg",
        ]
    assert [f.key for f in figures_of(sections["forest"])] == [
        f"forest-{m}-{s}" for m in ("val_loss", "downstream_avg") for s in ("d48", "d64")
    ]
    assert [f.key for f in figures_of(sections["decoupling"])] == [
        "decoupling-d48",
        "decoupling-d64",
    ]


def test_the_answer_names_the_regressor_and_the_funnel_counts_every_arm(
    csv_report: Report,
) -> None:
    answer = sections_of(csv_report)["answer"]
    lines = next(b for b in answer.blocks if isinstance(b, Bullets)).items
    assert len(lines) == 4
    assert any(line.startswith("post_ln: regressor on val_loss at both scales") for line in lines)
    funnel = next(b for b in answer.blocks if isinstance(b, Grid))
    counts = funnel.columns.index("within noise"), funnel.columns.index("incomplete")
    for row in funnel.rows:
        assert sum(int(cell) for cell in row[counts[0] : counts[1] + 1]) == int(row[2]) == 4
        rate, controlled = row[funnel.columns.index("design error rate")].split()
        assert float(rate) <= 0.05 and controlled == "(FWER)"  # measured, within α
        assert float(row[funnel.columns.index("worst, panel and beyond")]) <= 0.07


def test_single_scale_says_why_there_is_no_rank_shift(tmp_path: Path) -> None:
    csv = write_results(tmp_path / "one.csv", {"a": 0.0, "b": 0.05, "c": 0.0}, scales=("d48",))
    sections = sections_of(csv)
    check_absent(sections["transfer"], "one scale")
    check_present(sections["forest"])


def test_decoupling_needs_a_loss_and_a_downstream_metric(results_csv: Path) -> None:
    sections = sections_of(results_csv, metrics=["val_loss"])
    check_absent(sections["decoupling"], "downstream")
    assert len(figures_of(sections["forest"])) == 2  # one per scale


def test_factorial_csv_gets_an_interaction_heatmap(tmp_path: Path) -> None:
    effects = {"qk_norm": 0.02, "gqa": 0.03, "qk_norm+gqa": 0.09, "geglu": 0.0}
    sections = sections_of(write_results(tmp_path / "f.csv", effects, scales=("d48",)))
    check_present(sections["interactions"])
    table = next(b for b in sections["interactions"].blocks if isinstance(b, Grid))
    assert "harmful-count fit R²" in table.caption
    assert {row[0] for row in table.rows} >= {"qk_norm+gqa", "baseline"}


def test_audit_report_has_curves_with_the_divergence(audit_report: Report) -> None:
    sections = sections_of(audit_report)
    for key in ("answer", "forest", "decoupling", "curves", "transfer", "power", "arms"):
        check_present(sections[key])
    curves = sections["curves"]
    assert [f.key for f in figures_of(curves)] == [
        f"curves-{s}-{kind}" for s in ("d32", "d48") for kind in ("val", "loss", "grad")
    ]
    diverged = next(b for b in curves.blocks if isinstance(b, Bullets)).items
    assert diverged == ("geglu at d48, seed 1: step 12",)
    lines = next(b for b in sections["answer"].blocks if isinstance(b, Bullets)).items
    assert any(line.startswith("geglu: diverged at d48 (step 12)") for line in lines)


def test_audit_scope_and_provenance_come_from_the_run_directories(
    audit_report: Report,
) -> None:
    sections = sections_of(audit_report)
    scales = next(b for b in sections["scope"].blocks if isinstance(b, Grid))
    assert [row[0] for row in scales.rows] == ["d32", "d48"]
    assert all(row[2] == f"{20 * 512:,}" for row in scales.rows)  # steps × batch_tokens
    facts = dict(next(b for b in sections["provenance"].blocks if isinstance(b, Grid)).rows)
    assert len(facts["recipe hash"]) == 64
    assert facts["torch"] == "2.13.0" and facts["source_hash"] == "0123abcd"
    assert facts["command"] == "archaudit report runs/fake"
    assert len(facts["results sha256"]) == 64


def test_running_audit_gets_a_partial_report(tmp_path: Path) -> None:
    audit = fake_audit(tmp_path, {"qk_norm": 0.0, "post_ln": 0.1}, finished=0.0)
    report = build_report(audit)
    sections = {s.key: s for s in report.sections}
    assert "0 of 14 runs finished" in report.subtitle  # (1 + 2 arms) × 2 scales, 3 + 2 + 2 seeds
    check_absent(sections["answer"], "no run of the audit has finished")
    check_present(sections["curves"])
    check_present(sections["scope"])


def test_partial_report_says_how_far_the_audit_is(tmp_path: Path) -> None:
    audit = fake_audit(tmp_path, {"qk_norm": 0.0, "post_ln": 0.1}, finished=0.5)
    answer = {s.key: s for s in build_report(audit, metrics=["val_loss"]).sections}["answer"]
    note = next(b for b in answer.blocks if isinstance(b, Paragraph))
    assert note.text.startswith("Partial report: 7 of 14 runs finished")


def test_markdown_twin_links_figures_written_beside_it(csv_report: Report, tmp_path: Path) -> None:
    out = tmp_path / "out"
    html = write_html(csv_report, out / "r.html")
    write_markdown(csv_report, out / "md" / "r.md")
    text = (out / "md" / "r.md").read_text()
    links = [line.split("](")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    assert len(links) == 10  # 4 forest, 2 decoupling, 2 bump, 2 power
    for link in links:
        assert (out / "md" / link).read_text().startswith("<?xml")
    assert "> Not shown: a results CSV holds final numbers only" in text
    assert html.read_text().count("<figure>") == len(links)


def test_same_results_give_the_same_bytes(
    results_csv: Path, csv_report: Report, tmp_path: Path
) -> None:
    again = write_report(results_csv, tmp_path / "again.html").read_text()
    assert again == csv_report.html()


def test_a_sequential_audit_reports_the_loops_verdicts_and_design(tmp_path: Path) -> None:
    """The report must say what the sequential loop printed, not a fixed-design re-analysis
    that ignores the looks: verdicts, p and the loop's measured error rate come from its
    summary."""
    import json

    from scipy.stats import t as scipy_t

    from archaudit.audit.grid import store
    from archaudit.report.data import gather

    audit = fake_audit(tmp_path, {"qk_norm": 0.0, "geglu": 0.0, "softpick": 0.0})
    fixed = {(v.metric, v.scale): v for v in gather(audit).verdicts}
    v = fixed[("val_loss", "d48")]
    assert {arm.verdict for arm in v.arms} != {"improver"}
    test = {"se": 0.005, "df": 3.5, "threshold": 0.003}  # Welch's SE and df, its look's level
    rows = [
        {"arm": a.arm, "p": 1e-4, "t": 10.0, "verdict": "improver", "seeds": 2, "delta": 0.05}
        | test
        | {"stopped": "settled"}
        for a in v.arms
    ]
    family = {  # as the loop writes it, read through the one typed reader
        "baseline": "baseline",
        "metric": "val_loss",
        "scale": "d48",
        "sigma": 0.02,
        "sigma_dof": 7,
        "baseline_seeds": 3,
        "arms": rows,
    }
    rule = {"alpha": 0.05, "max_seeds": 3, "baseline_seeds": 3}
    folder = audit / store.SEQUENTIAL_DIR
    folder.mkdir()
    summary = {"rounds": 2, "runs": 14, "stop": "settled", "rule": rule, "families": [family]}
    (folder / store.SEQUENTIAL_SUMMARY).write_text(json.dumps(summary))
    looped = {(v.metric, v.scale): v for v in gather(audit).verdicts}
    seq = looped[("val_loss", "d48")]
    assert {arm.verdict for arm in seq.arms} == {"improver"}
    assert {arm.test for arm in seq.arms} == {"sequential"} and seq.sigma == 0.02
    # the interval dual to the loop's last test: its SE and df at its look's threshold (not
    # the pooled σ's), clear of 0 as the p below that threshold says
    half = 0.005 * scipy_t.isf(0.003 / 2, 3.5)
    for arm in seq.arms:
        assert arm.interval == pytest.approx((0.05 - half, 0.05 + half)) and half < 0.05
    assert all(arm.interval is not None for arm in v.arms if arm.test)
    assert seq.design_fwer is not None and seq.design_fwer <= 0.05
    assert looped[("val_loss", "d32")] == fixed[("val_loss", "d32")]  # not in the summary


def test_forest_range_holds_every_delta_and_the_band_and_cuts_only_far_intervals() -> None:
    from archaudit.report.figures import forest_range

    low, high = forest_range([-0.05, 0.02], band=0.03)
    assert (low, high) == pytest.approx((-0.13, 0.11))  # the span, 0.08, again on each side
    assert forest_range([0.5], band=0.1) == pytest.approx((-0.7, 1.1))
    assert forest_range([], band=0.1) == pytest.approx((-0.3, 0.3))  # no arm with a Δ yet
    assert forest_range([], band=float("nan")) == (-3.0, 3.0)


def test_the_answer_says_nominal_results_orders_by_importance_and_names_each_mdes_scale(
    csv_report: Report,
) -> None:
    """Issue 22: softpick (Δ −0.049, p 0.03, nominal-regressor) read "no val_loss effect
    detected"; the MDE quoted named no scale."""
    import dataclasses

    from archaudit.report.sections import arm_lines

    def nominal(v):
        arms = tuple(
            dataclasses.replace(a, verdict="nominal-regressor", p=0.03)
            if a.arm == "softpick" and v.metric == "val_loss" and v.scale == "d48"
            else a
            for a in v.arms
        )
        return dataclasses.replace(v, arms=arms)

    lines = arm_lines([nominal(v) for v in csv_report.data.verdicts])
    assert lines[0].startswith("post_ln: regressor")  # a verdict first
    softpick = next(line for line in lines if line.startswith("softpick"))
    assert "nominal-regressor on val_loss at d48" in softpick
    assert "significant before the correction only" in softpick
    assert lines.index(softpick) == 1  # nominal next, before the arms with nothing
    quiet = next(line for line in lines if line.startswith("geglu"))
    assert " at d48" in quiet.split("MDE", 1)[1] and " at d64" in quiet.split("MDE", 1)[1]


def test_numbers_are_written_by_the_one_formatter(csv_report: Report):
    """Issue 26: the report writes numbers as the CLI's tables do (archaudit/formatting.py). A
    small design error rate keeps its digits instead of reading as 0.000 (the old `.3f`)."""
    import dataclasses

    from archaudit.formatting import VALUE_DIGITS, num, pvalue, signed
    from archaudit.report.sections import ARM_DELTA, arm_table, funnel

    grids = [b for b in arm_table(csv_report.data).blocks if isinstance(b, Grid)]
    for v, grid in zip(csv_report.data.verdicts, grids, strict=True):
        for a, row in zip(v.arms, grid.rows, strict=True):
            cells = dict(zip(grid.columns, row, strict=True))
            assert cells["mean ± sd"].startswith(num(a.mean, VALUE_DIGITS))
            assert (cells[ARM_DELTA], cells["p"]) == (signed(a.delta), pvalue(a.p))
    tiny = dataclasses.replace(csv_report.data.verdicts[0], design_fwer=0.0004)
    (row,) = funnel([tiny]).rows
    assert row[8].startswith("0.0004 ")
