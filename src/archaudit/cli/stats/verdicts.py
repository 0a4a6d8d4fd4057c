"""`archaudit stats [verdicts] SOURCE`: every arm's verdict, read from the findings record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from archaudit.cli.base.options import (
    emit,
    judge_flags,
    output_flags,
)
from archaudit.cli.stats.common import (
    OptMetric,
    Source,
    absent_notes,
    findings_of,
    one,
    print_notes,
    print_rows,
    say_defaults,
    say_text,
    stats_app,
    table_of,
)
from archaudit.formatting import MISSING, pvalue
from archaudit.glossary import POINTER
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.records.verdicts import SIGNIFICANT

if TYPE_CHECKING:
    from archaudit.stats import Judgement


FixedDesign = Annotated[
    bool,
    typer.Option(
        "--fixed-design",
        help="On a sequential audit, also print the fixed-design re-analysis: descriptive only, "
        "it ignores the loop's looks and its seeds chosen after looking.",
    ),
]


@stats_app.command("verdicts")
@output_flags
@judge_flags()
def verdicts_command(
    source: Source,
    metric: OptMetric = None,
    options: JudgeOptions = DEFAULT,
    fixed_design: FixedDesign = False,
    json_: bool = False,
) -> None:
    """Verdict of every arm: Δ, t, corrected p, verdict, MDE, grade, and the design's error rate.
    On a sequential audit: the loop's verdicts, as `run` printed them and the report shows. On
    an audit folder without --metric or --scale: each primary metric at each scale."""
    from archaudit.audit.results.findings import Analysis
    from archaudit.stats.judging.family import no_arm_to_judge

    found = findings_of(
        source, metric, options, Analysis.VERDICTS, Analysis.TARGET, Analysis.STRESS
    )
    found.require(Analysis.VERDICTS, found.judgements)
    for judgement in found.judgements:
        if not judgement.arms:
            raise no_arm_to_judge(table_of(found), judgement.options)
    looped = any(j.sequential for j in found.judgements)
    descriptive = (
        findings_of(source, metric, options, Analysis.VERDICTS, loop=False).judgements
        if looped and fixed_design
        else ()
    )
    if json_:
        shown = one(found.judgements)
        emit({"verdicts": list(found.judgements), "descriptive": one(descriptive)}
             if descriptive else shown)  # fmt: skip
        return
    say_defaults(found)
    for judgement in found.judgements:
        _print_judgement(judgement, [])
        if judgement.sequential is None:
            from archaudit.cli.stats.at_target import print_at_target

            print_at_target(found.prediction, judgement.metric)
    _print_loop_end(looped, descriptive)
    stability = [row.line() for row in found.stability_rows()]
    stress = ["stability (`archaudit stress`): " + "; ".join(stability)] if stability else []
    print_notes([*stress, *found.notes, *absent_notes(found)])
    say_text(POINTER)


def _print_loop_end(looped: bool, descriptive: Sequence[Judgement]) -> None:
    """After a sequential audit's verdicts: whose they are, and the descriptive re-analysis."""
    if not looped:
        return
    say_text(
        "verdicts of the sequential loop, the same as `archaudit run` printed and the report shows"
    )
    if not descriptive:
        print_notes(["--fixed-design adds a fixed-design re-analysis (descriptive only)"])
        return
    say_text(
        "\ndescriptive fixed-design re-analysis (NOT the verdicts: it ignores the loop's "
        "looks and its seeds chosen after looking):"
    )
    for judgement in descriptive:
        _print_judgement(judgement, [])


def _print_judgement(judgement: Judgement, notes: list[str]) -> None:
    from archaudit.stats.judging.judgement_text import header
    from archaudit.stats.tests import statistical_test

    say_text("\n".join(header(judgement)))
    if judgement.sequential:
        return _print_loop_arms(judgement, notes)
    statistic = statistical_test(judgement.test).symbol
    # One seed count: its MDE is the header's; several: each arm's MDE gets a column.
    per_arm_mde = len({v.n_seeds for v in judgement.arms}) > 1
    paper = any(v.paper_verdict for v in judgement.arms)
    columns = ("arm", "n", "Δ", statistic, "p", "p_adj", "verdict", "grade")
    rows = [
        (
            v.arm + (" (tuned)" if v.tuned else "") + _outlier_mark(v.outliers),
            v.n_seeds,
            v.delta,
            v.statistic,
            pvalue(v.p),
            pvalue(v.p_adj),
            v.verdict,
            v.grade,
            *((v.mde,) if per_arm_mde else ()),
            *((v.paper_verdict or MISSING,) if paper else ()),
        )
        for v in judgement.arms
    ]
    extra = (*(("MDE",) if per_arm_mde else ()), *(("paper's rule",) if paper else ()))
    print_rows(None, (*columns, *extra), rows, optional=("paper's rule",))
    if paper:
        kept = [v.arm for v in judgement.arms if v.paper_verdict in SIGNIFICANT]
        notes = [
            "paper's rule: the published analysis (z against the nominal corrected α, no "
            f"calibration), beside the verdicts (its column, where the console is wide enough); "
            f"it declares {', '.join(kept) or 'no arm'}; its measured family-wise error rate on "
            f"this design is {judgement.design_fwer:.3f}",
            *notes,
        ]
    print_notes(
        [
            *limit_lines(judgement),
            "a verdict that is not significant means no effect larger than the arm's MDE "
            f"(detected with {judgement.power_target:.0%} power) was found, not that there is "
            "none",
            *judgement.notes,
            *notes,
        ]
    )


def limit_lines(judgement: Judgement) -> list[str]:
    """One line per arm whose verdict something limits, in the report's and the JSON's words
    (`ArmVerdict.caveats`); `run` and `demo` print them under their end tables too."""
    from archaudit.stats.judging.grading import CAVEAT_SEPARATOR

    return [
        f"limits of {v.arm}: {CAVEAT_SEPARATOR.join(v.caveats)}"
        for v in judgement.arms
        if v.caveats
    ]


def _print_loop_arms(judgement: Judgement, notes: list[str]) -> None:
    """A sequential judgement's arms: seeds, Δ, the last look's t, p and boundary, the verdict
    and why the arm stopped."""
    columns = ("arm", "seeds", "Δ", "t", "p", "boundary", "verdict", "stopped")
    rows = [
        (v.arm, v.n_seeds, v.delta, v.statistic, pvalue(v.p), pvalue(v.threshold), v.verdict,
         v.stopped)
        for v in judgement.arms
    ]  # fmt: skip
    print_rows(None, columns, rows)
    print_notes([*limit_lines(judgement), *judgement.notes, *notes])


def _outlier_mark(outliers: Sequence[Any]) -> str:
    """ " (outlier seed 3)" for seeds far outside the rest (stats/inference/outliers.py); ""
    otherwise."""
    if not outliers:
        return ""
    seeds = ", ".join(str(o.seed) for o in outliers)
    return f" (outlier seed{'s' * (len(outliers) > 1)} {seeds})"
