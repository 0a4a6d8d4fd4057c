"""`archaudit stats ...` and `archaudit simulate-null`: the judging half of the protocol.

    archaudit stats SOURCE --metric NAME [...]        verdicts (same as `stats verdicts`)
    archaudit stats transfer|interactions|scaling|power|decoupling|items ...
    archaudit simulate-null --arms M --seeds K --audits N [...]

SOURCE is an audit directory (read from its runs' DONE records) or a long-format CSV. Library
imports happen inside the commands so that `archaudit --help` stays fast.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from typer.core import TyperGroup

from archaudit.cli.app import app
from archaudit.cli.options import (
    Baseline,
    Json,
    LowerIsBetter,
    Quiet,
    emit,
    in_range,
    judge_flags,
    quiet_output,
)
from archaudit.cli.tables import print_table, say
from archaudit.errors import ConfigError
from archaudit.formatting import BETTER_DOWN, BETTER_UP, MISSING, estimate, interval, num, pvalue
from archaudit.glossary import POINTER
from archaudit.metrics import DOWNSTREAM_AVERAGE, PRIMARY_LOSS
from archaudit.names import BASELINE, Test
from archaudit.stats.options import DEFAULT, JudgeOptions, primary_alpha

if TYPE_CHECKING:
    from archaudit.audit.findings import Analysis, Findings, Settings
    from archaudit.stats import AuditDesign, Judgement, Table
    from archaudit.stats.analyses.baseline_transfer import BaselineTransfer
    from archaudit.stats.analyses.decoupling import Decoupling
    from archaudit.stats.analyses.interactions import Interactions
    from archaudit.stats.analyses.transfer import ScaleTransfer
    from archaudit.stats.inference.paired import ItemComparison, MeasureComparison
    from archaudit.stats.simulation.sequential import SequentialRule
    from archaudit.stats.simulation.simulate import NullSimulation


class _VerdictsByDefault(TyperGroup):
    """Reads `stats SOURCE ...` as `stats verdicts SOURCE ...`: a group cannot take a positional
    argument and sub-commands at once, so the default sub-command is spliced in."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's vendored Context
        if not args:  # the whole help (120 lines) answered a missing source
            raise ConfigError(
                "archaudit stats needs a source: archaudit stats RUNS_DIR (an audit folder, "
                "audit file or results CSV) — see archaudit stats --help"
            )
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["verdicts", *args]
        return super().parse_args(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The group's help, then the default table's own (`stats SOURCE` runs `verdicts`):
        its options were otherwise only under `stats verdicts --help`."""
        super().format_help(ctx, formatter)
        default = self.commands["verdicts"]
        _console().print("\n`archaudit stats SOURCE` is `archaudit stats verdicts SOURCE`:")
        default.format_help(type(ctx)(default, info_name="verdicts", parent=ctx), formatter)


stats_app = typer.Typer(
    cls=_VerdictsByDefault,
    no_args_is_help=True,
    help="Judge arms against the seed noise floor. `archaudit stats SOURCE --metric M` prints "
    "verdicts; the sub-commands run the other analyses of docs/protocol.md.",
)
app.add_typer(stats_app, name="stats")

Source = Annotated[Path, typer.Argument(help="Audit directory (its finished runs) or a CSV.")]
Metric = Annotated[str, typer.Option("--metric", help="Metric to judge, e.g. val_loss.")]
OptMetric = Annotated[
    str | None,
    typer.Option("--metric", help="Metric to judge [default: an audit's primary metrics, each]."),
]
OptScale = Annotated[
    str | None, typer.Option("--scale", help="Scale [default: every scale, each in turn].")
]
VERDICT_FLAGS = (
    "baseline", "anchors", "lower_is_better", "correction", "alpha", "scale", "reference",
    "equal_variance", "exclude", "arms",
)  # fmt: skip
"""The judging flags of `stats verdicts` (generated from `JudgeOptions`)."""
Seed = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap / simulation.")]
Boot = Annotated[int, typer.Option("--n-boot", help="Bootstrap replicates.")]
Confidence = Annotated[
    float,
    typer.Option(
        "--confidence",
        help="Coverage of the intervals: a level in (0, 1).",
        callback=in_range(0, 1, low_open=True, high_open=True),
    ),
]
LossMetric = Annotated[str, typer.Option("--loss-metric", help="The loss (lower is better).")]


def _console() -> Console:
    # Built per use so that COLUMNS set after import (tests, wrappers) is honoured.
    return Console(highlight=False)


FixedDesign = Annotated[
    bool,
    typer.Option(
        "--fixed-design",
        help="On a sequential audit, also print the fixed-design re-analysis: descriptive only, "
        "it ignores the loop's looks and its seeds chosen after looking.",
    ),
]


@stats_app.command("verdicts")
@judge_flags(*VERDICT_FLAGS)
def verdicts_command(
    source: Source,
    metric: OptMetric = None,
    options: JudgeOptions = DEFAULT,
    fixed_design: FixedDesign = False,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """Verdict of every arm: Δ, t, corrected p, verdict, MDE, grade, and the design's error rate.
    On a sequential audit: the loop's verdicts, as `run` printed them and the report shows. On
    an audit folder without --metric or --scale: each primary metric at each scale."""
    from archaudit.audit.findings import Analysis
    from archaudit.stats.family import no_arm_to_judge

    quiet_output(quiet, json_)
    found = _findings(source, metric, options, Analysis.VERDICTS, Analysis.TARGET, Analysis.STRESS)
    found.require(Analysis.VERDICTS, found.judgements)
    for judgement in found.judgements:
        if not judgement.arms:
            raise no_arm_to_judge(_table(found), judgement.options)
    looped = any(j.sequential for j in found.judgements)
    descriptive = (
        _findings(source, metric, options, Analysis.VERDICTS, loop=False).judgements
        if looped and fixed_design
        else ()
    )
    if json_:
        shown = _one(found.judgements)
        emit({"verdicts": list(found.judgements), "descriptive": _one(descriptive)}
             if descriptive else shown)  # fmt: skip
        return
    _say_defaults(found)
    for judgement in found.judgements:
        _print_judgement(judgement, [])
        if judgement.sequential is None:
            from archaudit.cli.at_target import print_at_target

            print_at_target(found.prediction, judgement.metric)
    _print_loop_end(looped, descriptive)
    stability = [row.line() for row in found.stability_rows()]
    stress = ["stability (`archaudit stress`): " + "; ".join(stability)] if stability else []
    _print_notes([*stress, *found.notes, *_absent_notes(found)])
    _say(POINTER)


def _findings(
    source: Path,
    metric: str | Sequence[str] | None,
    options: JudgeOptions,
    *analyses: Analysis,
    each_scale: bool | None = None,
    loop: bool = True,
    settings: Settings | None = None,
) -> Findings:
    """The slices `analyses` of SOURCE's findings (`audit.findings`: the one loader and the one
    loop over baselines, metrics and scales), `metric` alone when named."""
    from archaudit.audit.findings import Asked, Settings, findings

    named = [metric] if isinstance(metric, str) else list(metric or ())
    asked = Asked(frozenset(analyses), each_scale, loop, settings=settings or Settings())
    return findings(source, named, options, asked=asked)


def _load(source: Path) -> tuple[Table, list[str]]:
    """SOURCE's table and what its reader must know (`audit.source.load_source`)."""
    from archaudit.audit.source import load_source

    loaded = load_source(source)
    assert loaded.table is not None  # not partial: an audit with no finished run raised
    return loaded.table, list(loaded.notes)


def _table(found: Findings) -> Table:
    assert found.table is not None  # a CLI findings record is never partial
    return found.table


def _one(results: Sequence[Any]) -> Any:
    """One result as itself, several as a list (the JSON of one analysis over many)."""
    return results[0] if len(results) == 1 else list(results)


T = TypeVar("T")


def _show(
    found: Findings,
    analysis: Analysis,
    results: Sequence[T],
    json_: bool,
    printer: Callable[[T], None],
    *,
    scales_only: bool = False,
) -> None:
    """One slice of the findings: refused with its reason when empty, else its JSON, or the
    defaults line and each result printed."""
    found.require(analysis, results)
    if _printed_json(_one(results), json_):
        return
    _say_defaults(found, scales_only=scales_only)
    for result in results:
        printer(result)


def _say_defaults(found: Findings, *, scales_only: bool = False) -> None:
    """The line that says what the source chose where the command line named nothing."""
    said = [d for d in found.defaults if not scales_only or not d.startswith("metrics")]
    if said:
        where = "the audit folder" if found.kind == "audit" else "the table"
        _say(f"defaults from {where}: {'; '.join(said)}")


def _absent_notes(found: Findings) -> list[str]:
    return [f"not computed ({a.analysis} {a.where}): {a.reason}" for a in found.absent]


def _print_loop_end(looped: bool, descriptive: Sequence[Judgement]) -> None:
    """After a sequential audit's verdicts: whose they are, and the descriptive re-analysis."""
    if not looped:
        return
    _say(
        "verdicts of the sequential loop, the same as `archaudit run` printed and the report shows"
    )
    if not descriptive:
        _print_notes(["--fixed-design adds a fixed-design re-analysis (descriptive only)"])
        return
    _say(
        "\ndescriptive fixed-design re-analysis (NOT the verdicts: it ignores the loop's "
        "looks and its seeds chosen after looking):"
    )
    for judgement in descriptive:
        _print_judgement(judgement, [])


def _print_judgement(judgement: Judgement, notes: list[str]) -> None:
    from archaudit.stats.judgement_text import header

    _say("\n".join(header(judgement)))
    if judgement.sequential:
        return _print_loop_arms(judgement, notes)
    statistic = "z" if judgement.test == Test.Z else "t"
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
    _print_table(None, (*columns, *extra), rows, optional=("paper's rule",))
    if paper:
        kept = [v.arm for v in judgement.arms if v.paper_verdict in ("improver", "regressor")]
        notes = [
            "paper's rule: the published analysis (z against the nominal corrected α, no "
            f"calibration), beside the verdicts (its column, where the console is wide enough); "
            f"it declares {', '.join(kept) or 'no arm'}; its measured family-wise error rate on "
            f"this design is {judgement.design_fwer:.3f}",
            *notes,
        ]
    _print_notes(
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
    from archaudit.stats.grading import CAVEAT_SEPARATOR

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
    _print_table(None, columns, rows)
    _print_notes([*limit_lines(judgement), *judgement.notes, *notes])


def _outlier_mark(outliers: Sequence[Any]) -> str:
    """ " (outlier seed 3)" for seeds far outside the rest (stats/inference/outliers.py); ""
    otherwise."""
    if not outliers:
        return ""
    seeds = ", ".join(str(o.seed) for o in outliers)
    return f" (outlier seed{'s' * (len(outliers) > 1)} {seeds})"


@stats_app.command("transfer")
@judge_flags("scale", "lower_is_better", "correction", "alpha", "exclude", "arms")
def transfer_command(
    source: Source,
    metric: OptMetric = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option("--baseline", help="Baseline arm; repeat it to compare baselines."),
    ] = None,
    small: Annotated[str | None, typer.Option("--from", help="Smaller scale.")] = None,
    large: Annotated[str | None, typer.Option("--to", help="Larger scale.")] = None,
    options: JudgeOptions = DEFAULT,
    confidence: Confidence = 0.95,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """Cross-scale transfer (one baseline) or transfer across baselines (several); on an audit
    folder without --metric, each primary metric."""
    from archaudit.audit.findings import Analysis, Settings

    quiet_output(quiet, json_)
    several = tuple(baseline or ()) if baseline and len(baseline) > 1 else ()
    if options.scale is not None and not several:
        _refuse_one_scale(options)
    settings = Settings(small=small, large=large, confidence=confidence, baselines=several)
    analysis = Analysis.BASELINES if several else Analysis.TRANSFER
    asked = (
        options.but(baseline=several[0])
        if several
        else options.but(baseline=(baseline or [options.baseline])[0])
    )
    found = _findings(source, metric, asked, analysis, each_scale=True, settings=settings)
    if several:
        _show(found, analysis, found.baseline_transfers, json_, _print_across)
    else:
        _show(found, analysis, found.transfers, json_, _print_transfer)


def _refuse_one_scale(options: JudgeOptions) -> None:
    raise ConfigError(
        f"cross-scale transfer compares two scales, not scale {options.scale!r}: "
        "name them with small and large (--from, --to)"
    )


def _print_across(across: BaselineTransfer) -> None:
    baselines = across.baselines
    _print_table(
        f"{across.metric} at {across.scale}: sign agreement {across.sign_agreement:.0%}",
        ("arm", *(f"Δ vs {b}" for b in baselines), *(f"verdict vs {b}" for b in baselines)),
        [(a.arm, *a.deltas.values(), *a.verdicts.values()) for a in across.arms],
    )
    _print_notes(
        [f"verdict flips between baselines: {', '.join(across.flipped)}"] if across.flipped else []
    )


def _print_transfer(result: ScaleTransfer) -> None:
    metric = result.metric
    _print_table(
        f"{metric}: {result.small} → {result.large}, sign kept by {result.sign_preserved:.0%}; "
        f"{estimate('Spearman ρ', result.spearman, result.spearman_interval)}, "
        f"{estimate('Kendall τ', result.kendall, result.kendall_interval)}",
        (
            "arm",
            f"Δ {result.small}",
            f"Δ {result.large}",
            "sign kept",
            "rank",
            "rank after",
            "shift",
            "could be",
            f"verdict {result.large}",
        ),
        [
            (
                a.arm,
                a.delta_small,
                a.delta_large,
                a.sign_preserved,
                a.rank_small,
                a.rank_large,
                a.rank_shift,
                "{}–{} → {}–{}".format(*a.rank_small_range, *a.rank_large_range),
                a.verdict_large,
            )
            for a in result.arms
        ],
        optional=("shift", "sign kept", "could be"),
    )
    notes = list(result.notes)
    if result.diverged_only_at_large:
        notes.append(f"diverged only at {result.large}: {', '.join(result.diverged_only_at_large)}")
    _print_notes(notes)


@stats_app.command("interactions")
@judge_flags("baseline", "lower_is_better", "correction", "scale", "exclude", "arms")
def interactions_command(
    source: Source,
    metric: OptMetric = None,
    options: JudgeOptions = DEFAULT,
    separator: Annotated[str, typer.Option("--sep", help="Joins choices in arm names.")] = "+",
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """Factorial interactions (observed vs additive) and the harmful-count regression; on an
    audit folder without --metric or --scale, each primary metric at each scale."""
    from archaudit.audit.findings import Analysis, Settings

    quiet_output(quiet, json_)
    found = _findings(
        source, metric, options, Analysis.INTERACTIONS, settings=Settings(separator=separator)
    )
    _show(found, Analysis.INTERACTIONS, found.interactions, json_, _print_interactions)


def _print_interactions(result: Interactions) -> None:
    metric = result.metric
    _print_table(
        f"{metric} at {result.scale}: R² additive {num(result.r2_additive)}, R² harmful count "
        f"{num(result.r2_harmful_count)} (harmful: {', '.join(result.harmful) or 'none'})",
        ("arm", "seeds", "observed", "additive", "interaction", "in σ", "harmful"),
        [
            (
                c.arm,
                c.n_seeds,
                c.observed,
                c.predicted,
                c.interaction,
                c.interaction_sigmas,
                c.harmful_count,
            )
            for c in result.combinations
        ],
    )


@stats_app.command("scaling")
def scaling_command(
    source: Source,
    arm: Annotated[str, typer.Option("--arm", help="Arm whose runs are fitted.")] = BASELINE,
    loss_metric: LossMetric = PRIMARY_LOSS,
    lower_is_better: LowerIsBetter = DEFAULT.lower_is_better,
    params_metric: Annotated[str, typer.Option("--params-metric")] = "params",
    tokens_metric: Annotated[str, typer.Option("--tokens-metric")] = "tokens",
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            help="FLOPs (C = 6·N·D) for optimal N, D.",
            callback=in_range(0, low_open=True),
        ),
    ] = None,
    n_boot: Boot = 200,
    seed: Seed = 0,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """Fit L(N, D) = E + A/N^α + B/D^β with bootstrap intervals; optimal N, D for a budget."""
    from archaudit.stats import fit_scaling_law

    quiet_output(quiet, json_)
    fit = fit_scaling_law(
        _load(source)[0],
        arm=arm,
        loss_metric=loss_metric,
        params_metric=params_metric,
        tokens_metric=tokens_metric,
        budget=budget,
        n_boot=n_boot,
        seed=seed,
        lower_is_better=lower_is_better,
    )
    if _printed_json(fit, json_):
        return
    values = fit.surface.to_dict() | {"n_opt": fit.n_opt, "d_opt": fit.d_opt}
    _print_table(
        f"{arm}: {fit.loss_metric} over {fit.n_points} runs, {fit.n_boot} bootstrap refits",
        ("parameter", "estimate", "95% interval"),
        [(name, values[name], interval(bounds)) for name, bounds in fit.intervals.items()],
    )
    _print_notes(list(fit.notes))


NArms = Annotated[
    int, typer.Option("--n-arms", help="m, the number of arms in the family (a count).")
]
DesignSeeds = Annotated[int, typer.Option("--seeds", help="Seeds per arm.")]
BaselineSeeds = Annotated[
    int | None,
    typer.Option("--baseline-seeds", help="Default: as many as --seeds, at least 3."),
]


@stats_app.command("power")
@judge_flags(
    "baseline", "lower_is_better", "scale", "exclude", "arms", "reference", "power_target",
    "correction", "alpha",
)  # fmt: skip
def power_command(
    source: Annotated[
        Path | None, typer.Argument(help="With --metric: per-arm adaptive-seeding advice.")
    ] = None,
    metric: OptMetric = None,
    options: JudgeOptions = DEFAULT,
    seeds: DesignSeeds = 3,
    baseline_seeds: BaselineSeeds = None,
    n_arms: NArms = 19,
    effect: Annotated[
        float | None,
        typer.Option(
            "--effect",
            help="Effect in σ: seeds needed to detect it.",
            callback=in_range(0, low_open=True),
        ),
    ] = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """MDE and seeds needed for a design; with SOURCE, whether another seed can flip a verdict."""
    quiet_output(quiet, json_)
    if source is None:
        _names(options.arms, table=False)
        _design_power(seeds, n_arms, options, baseline_seeds, effect, json_)
        return

    _seeding_advice(source, metric, options, json_)


def _seeding_advice(source: Path, metric: str | None, options: JudgeOptions, json_: bool) -> None:
    """`stats power SOURCE`: per arm of each fixed-design judgement, could one more seed change
    its verdict?"""
    from archaudit.audit.findings import Analysis
    from archaudit.stats import adaptive_seeding

    found = _findings(source, metric, options, Analysis.VERDICTS, loop=False)
    found.require(Analysis.VERDICTS, found.judgements)
    advice = [adaptive_seeding(_table(found), j) for j in found.judgements]
    if _printed_json(_one(advice), json_):
        return
    _say_defaults(found)
    for judged, each in zip(found.judgements, advice, strict=True):
        _print_table(
            f"{judged.metric} at {each.scale}: could one more seed change the verdict?",
            ("arm", "seeds", "verdict", "P(change)", "add a seed"),
            [(a.arm, a.n_seeds, a.verdict, a.p_change, a.add_seed) for a in each.arms],
        )


def _design_power(
    seeds: int,
    n_arms: int,
    options: JudgeOptions,
    baseline_seeds: int | None,
    effect: float | None,
    json_: bool,
) -> None:
    """`stats power` without SOURCE: the design's MDE, and the seeds `effect` needs."""
    from archaudit.stats import design_power

    result = design_power(seeds, n_arms, options, baseline_seeds=baseline_seeds, effect=effect)
    if _printed_json(result, json_):
        return
    design = result.design
    _say(
        f"{seeds} seed(s) per arm, {design.baseline_seeds} baseline seeds, m = {n_arms}, "
        f"{design.test} test, {options.correction} at α = {options.alpha} (calibrated level "
        f"α′ = {num(result.level)}, as a verdict table of this design states): minimum "
        f"detectable effect {result.mde_sigmas:.2f} σ at {result.target:.0%} power"
    )
    if effect is None:
        return
    _say(
        f"to detect {effect} σ: {result.seeds_needed} seeds per arm"
        if result.seeds_needed is not None
        else f"{effect} σ is not detectable with up to {result.max_seeds} seeds per arm with "
        "this baseline (effects under 2 σ are within noise by rule; a small baseline limits "
        "Welch's test)"
    )


@stats_app.command("decoupling")
@judge_flags("baseline", "correction", "alpha", "scale", "exclude", "arms")
def decoupling_command(
    source: Source,
    loss_metric: LossMetric = PRIMARY_LOSS,
    downstream_metric: Annotated[str, typer.Option("--downstream-metric")] = DOWNSTREAM_AVERAGE,
    options: JudgeOptions = DEFAULT,
    margin: Annotated[
        float | None,
        typer.Option(
            "--margin",
            callback=in_range(0, low_open=True),
            help="Equivalence margin in noise floors σ: a metric is flat when its interval "
            "lies within ±margin (TOST). Default: each arm's MDE.",
        ),
    ] = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """Arms whose loss and downstream verdicts disagree, per arm and per family; on an audit
    folder without --scale, at each scale."""
    from archaudit.audit.findings import Analysis, Settings

    quiet_output(quiet, json_)
    settings = Settings(margin=margin, loss_metric=loss_metric, downstream_metric=downstream_metric)
    metrics = (loss_metric, downstream_metric)
    found = _findings(source, metrics, options, Analysis.DECOUPLING, settings=settings)
    _show(found, Analysis.DECOUPLING, found.decouplings, json_, _print_decoupling)


def _print_decoupling(result: Decoupling) -> None:
    loss_metric, downstream_metric, margin = (
        result.loss_metric, result.downstream_metric, result.margin,
    )  # fmt: skip
    _print_table(
        f"{loss_metric} vs {downstream_metric} at {result.scale} (r_L: relative {loss_metric} "
        f"change, {BETTER_DOWN}; Δ: {BETTER_UP}; flat: equivalent within "
        + ("each arm's MDE" if margin is None else f"±{margin} σ")
        + " by TOST, a margin of at most a fifth of the baseline's value, else flat is not "
        "testable; not significant alone is not flat)",
        ("arm", "family", "r_L", "loss", f"Δ {downstream_metric}", "z", "downstream", "decoupled"),
        [
            (
                a.arm,
                a.family,
                a.loss_change,
                _side(a.loss_verdict, a.loss_status),
                a.downstream_delta,
                a.downstream_z,
                _side(a.downstream_verdict, a.downstream_status),
                a.kind or "",
            )
            for a in result.arms
        ],
        optional=("family", "z", "r_L"),
    )
    _print_table(
        "per family",
        ("family", "arms", "decoupled", "share", "mean |r_L|", "mean |z downstream|"),
        [
            (
                f.family,
                f.n_arms,
                f.n_decoupled,
                f.share,
                f.mean_abs_loss_change,
                f.mean_abs_downstream_z,
            )
            for f in result.families
        ],
    )


def _side(verdict: str, status: str) -> str:
    """ "regressor", "within-noise, flat", "within-noise, flat not testable" (margin too wide)."""
    from archaudit.stats.analyses.decoupling import MOVED, NOT_SHOWN_FLAT

    return verdict if status in (MOVED, NOT_SHOWN_FLAT) else f"{verdict}, {status}"


@stats_app.command("items")
def items_command(
    source: Annotated[Path, typer.Argument(help="Audit directory (its items.csv) or items CSV.")],
    scale: OptScale = None,
    baseline: Baseline = DEFAULT.baseline,
    task: Annotated[str | None, typer.Option("--task", help="One task (default: all).")] = None,
    measure: Annotated[
        str,
        typer.Option(
            "--measure",
            metavar="correct|bpb|margin",
            help="What is paired per item: correctness (bootstrap, McNemar), or the gold "
            "continuation's bits per byte (lower is better) or the choice margin (higher is "
            "better), by a paired t-test and a Wilcoxon signed-rank test.",
        ),
    ] = "correct",
    n_boot: Boot = 2000,
    seed: Seed = 0,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """Paired item-level tests (bootstrap, McNemar, Wilson; t and Wilcoxon on bpb or margin);
    item vs seed uncertainty."""
    from archaudit.stats import compare_item_measure, compare_items, load_items

    quiet_output(quiet, json_)
    items = load_items(source)
    arms = [arm for arm in items.arms if arm != baseline]
    if not arms:
        raise ConfigError(f"{source}: no arm but {baseline!r} to compare: nothing to judge")
    if scale is not None:
        items.check_scale(scale)
    scales = [scale] if scale else list(items.scales)
    if len(scales) > 1 and not json_:
        _say(f"every scale of the items in turn: {', '.join(scales)}")
    found = []
    for at in scales:
        results: list[ItemComparison] | list[MeasureComparison]
        if measure == "correct":
            results = [
                compare_items(items, arm, baseline, at, task=task, n_boot=n_boot, seed=seed)
                for arm in arms
            ]
        else:
            results = [
                compare_item_measure(
                    items, arm, baseline, at, measure, task=task, n_boot=n_boot, seed=seed
                )
                for arm in arms
            ]
        found.append(results)
        if not json_:
            title = f"paired on the items of these checkpoints at {at}" + (
                f", task {task}" if task else ""
            )
            (_print_item_accuracy if measure == "correct" else _print_item_measure)(title, results)
            _print_notes(_item_caveats(results))
    _printed_json(found[0] if len(found) == 1 else found, json_)


def _item_caveats(results: Sequence[ItemComparison | MeasureComparison]) -> list[str]:
    """What an item-level p does not say: it tests these trained checkpoints on these items,
    not the modification across seeds (a small p here can sit beside a within-noise verdict)."""
    notes = [
        "these tests resample the benchmark items of these checkpoints, not the seeds: a small "
        "p says these trained models differ on these items, not that the modification beats "
        "the baseline across training seeds (that is the seed-level verdict of `archaudit "
        "stats`)"
    ]
    for r in results:
        if not math.isfinite(r.se_seeds):
            notes.append(f"{r.arm}: one seed on a side, so the seed noise is not measured")
        elif r.se_seeds > r.se_items:
            notes.append(
                f"{r.arm}: SE over seeds {num(r.se_seeds)} exceeds SE over items "
                f"{num(r.se_items)}: the seeds, not the items, limit any claim"
            )
    return notes


def _print_item_accuracy(title: str, results: list) -> None:
    _print_table(
        title,
        (
            "arm",
            "items",
            "Δ accuracy",
            "95% interval",
            "p (bootstrap)",
            "SE items",
            "SE seeds",
            "McNemar p",
        ),
        [
            (
                r.arm,
                r.n_items,
                r.difference.difference,
                interval((r.difference.low, r.difference.high)),
                r.difference.p,
                r.se_items,
                r.se_seeds,
                ", ".join(num(m.p) for m in r.mcnemar),
            )
            for r in results
        ],
        optional=("McNemar p", "SE items", "items"),
    )


def _print_item_measure(title: str, results: list) -> None:
    measure = results[0].measure if results else ""
    better = "higher" if results and results[0].higher_is_better else "lower"
    _print_table(
        f"{title}, {measure} ({better} is better; Δ > 0 means better)",
        (
            "arm",
            "items",
            f"Δ {measure}",
            "95% interval",
            "favours",
            "t-test p",
            "Wilcoxon p",
            "SE seeds",
        ),
        [
            (
                r.arm,
                r.n_items,
                r.difference.difference,
                interval((r.difference.low, r.difference.high)),
                _favours(r.difference.difference),
                r.t_test.p,
                r.wilcoxon.p,
                r.se_seeds,
            )
            for r in results
        ],
        optional=("Wilcoxon p", "items", "favours"),
    )


def _favours(delta: float) -> str:
    return "arm" if delta > 0 else "baseline" if delta < 0 else "neither"


@app.command("simulate-null")
@judge_flags(
    "scale", "baseline", "arms", "exclude", "correction", "alpha", "reference", "equal_variance"
)
def simulate_null_command(
    n_arms: NArms = 19,
    seeds: DesignSeeds = 3,
    audits: Annotated[int, typer.Option("--audits", help="Simulated audits.")] = 2000,
    baseline_seeds: BaselineSeeds = None,
    like: Annotated[
        Path | None,
        typer.Option(
            "--like",
            help="Take the design (arms, seeds per arm, baseline and anchor seeds) from an audit "
            "file (.toml), a results CSV or an audit directory, instead of --n-arms/--seeds.",
        ),
    ] = None,
    metric: Annotated[
        str | None, typer.Option("--metric", help="With --like CSV: the metric (default: first).")
    ] = None,
    options: JudgeOptions = DEFAULT,
    effect: Annotated[
        float, typer.Option("--effect", help="Planted effect in σ.", callback=in_range())
    ] = 0.0,
    effect_arms: Annotated[int, typer.Option("--effect-arms", help="Arms with it.")] = 0,
    seed: Seed = 0,
    json_: Json = False,
    quiet: Quiet = False,
    sequential: Annotated[
        bool, typer.Option("--sequential", help="The `run --until-settled` loop, --seeds at most.")
    ] = False,
    noise: Annotated[
        str,
        typer.Option(
            "--noise",
            metavar="MODEL",
            help="Seed noise: normal, t3, lognormal:S, hetero:F[:K] (K arms with seed σ × F), "
            "or panel (all eight; prints each rate and the worst).",
        ),
    ] = "normal",
) -> None:
    """Simulated audits with no real effect: the verdicts' family-wise false-positive rate."""
    from archaudit.cli.sequential_cmd import loop_rule, simulate_sequential_command
    from archaudit.stats import AuditDesign, simulate_null

    quiet_output(quiet, json_)
    table_like = like is not None and like.suffix != ".toml"
    if not table_like:
        _names(options.arms, table=False)
    looped = _sequential_like(like, options) if like and not table_like else None
    if sequential or looped:
        n_loop, rule = looped or (n_arms, loop_rule(options, seeds, baseline_seeds))
        return simulate_sequential_command(
            n_loop,
            rule,
            audits=audits,
            effect=effect,
            effect_arms=effect_arms,
            seed=seed,
            noise=noise,
            json_=json_,
        )
    if like is not None:
        design = _design_like(like, metric, options)
    else:
        design = AuditDesign.balanced(n_arms, seeds, baseline_seeds, options)
    result = simulate_null(
        design, audits=audits, effect=effect, effect_arms=effect_arms, seed=seed, noise=noise
    )
    if not _printed_json(result, json_):
        _print_null(result)


def _print_null(result: NullSimulation) -> None:
    """A `NullSimulation` as the lines a reader checks: the rates, and the panel's if run."""
    from archaudit.cli.sequential_cmd import print_panel

    label = "calibrated" if result.calibrated else "UNCALIBRATED paper mode"
    assumed = result.design.equal_variance or not result.calibrated
    _say(
        f"{result.audits} null audits of {result.design.describe()} ({label}"
        + (", ASSUMES every arm's seed σ is the baseline's" if assumed else "")
        + f"), {result.noise if result.noise != 'panel' else 'normal'} noise:\n"
        f"  family-wise false-positive rate {result.fwer:.4f} ± {result.fwer_se:.4f}"
        + ("  ABOVE α" if result.fwer > result.alpha + 2 * result.fwer_se else "")
        + f"\n  false candidates (≥ 1 null arm)  {result.candidate_rate:.4f} (each a second seed)"
        f"\n  calibrated level α′              {result.level:.3g} median, {result.level_min:.3g} "
        "lowest (each audit's own)"
        + f"\n  per-arm rate at raw p < α/m      {result.per_arm_rate:.4f} "
        f"(α/m = {result.alpha / result.n_arms:.4f})\n"
        f"  uncorrected (any raw p < α)     {result.fwer_uncorrected:.3f} "
        f"(1 − (1 − α)^m = {result.fwer_uncorrected_formula:.3f} for independent tests)"
    )
    if result.effect_arms:
        _say(
            f"  planted {result.effect} σ effects found {result.found_rate:.3f} ± "
            f"{result.found_se:.3f} (power formula: {result.power_predicted:.3f})"
        )
    print_panel(result.panel, result.panel_worst)


def _sequential_like(path: Path, options: JudgeOptions) -> tuple[int, SequentialRule] | None:
    """(arms, the loop's rule) of an audit file with `[seeds] policy = "sequential"`, else None.

    The rule has the file's most seeds per arm and baseline seeds, and α split over its primary
    metrics, as the loop splits it.
    """
    from archaudit.audit.plan import make_plan
    from archaudit.audit.sequential import SettleOptions, primary_metrics
    from archaudit.audit.spec import load_audit
    from archaudit.cli.sequential_cmd import loop_rule

    plan = make_plan(load_audit(path))
    if plan.spec.seeds.policy != "sequential":
        return None
    first = plan.runs[0]
    arms = {r.arm for r in plan.runs if r.baseline == first.baseline and r.scale == first.scale}
    tested = [arm for arm in arms if arm.split("@")[0] != BASELINE]
    primaries = len(primary_metrics(plan, SettleOptions()))
    split = options.but(alpha=primary_alpha(options.alpha, primaries))
    return len(tested), loop_rule(split, plan.spec.seeds.max, plan.spec.seeds.noise_floor)


def _design_like(path: Path, metric: str | None, options: JudgeOptions) -> AuditDesign:
    """The design of an audit file (its plan: seeds per arm at the first baseline and scale) or
    of a results table (the family `archaudit stats` would judge)."""
    from archaudit.stats import AuditDesign, family_design

    if path.suffix == ".toml":
        from archaudit.audit.plan import make_plan
        from archaudit.audit.spec import load_audit

        runs = make_plan(load_audit(path)).runs
        first = runs[0]
        seeds = Counter(
            r.arm for r in runs if r.baseline == first.baseline and r.scale == first.scale
        )
        base = next(arm for arm in seeds if arm.split("@")[0] == BASELINE)
        arm_seeds = [n for arm, n in seeds.items() if arm != base]
        return AuditDesign.judged_by(options, arm_seeds, seeds[base])
    table = _load(path)[0]
    return family_design(table, metric or table.metrics[0], options)


def _print_table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence],
    optional: Sequence[str] = (),
) -> None:
    """A table that fits the console (cli/tables.py): names whole, words never chopped, the
    `optional` columns left out in that order when the rest would not fit."""
    print_table(_console(), title, columns, [[_cell(v) for v in row] for row in rows], optional)


def _say(text: str, indent: str = "") -> None:
    """Prose at the console's width, broken at spaces only (`cli.tables.say`)."""
    say(_console(), text, indent=indent)


def _print_notes(notes: Sequence[str]) -> None:
    for note in notes:
        _say(f"- {note}", indent="  ")


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return num(value)
    return MISSING if value is None else str(value)


def _names(values: Sequence[str] | None, *, table: bool = True) -> list[str] | None:
    """Arm names from a repeatable flag that also takes commas: --arms a,b --arms c.

    `--arms` always names arms of a table. On a command without one (`table=False`) names are
    refused, and a bare number (the old `--arms 19` of `stats power` and `simulate-null`) is
    refused with the flag that takes a count.
    """
    if not values:
        return None
    names = [name for value in values for name in value.split(",") if name]
    if table:
        return names
    count = next((name for name in names if name.isdigit()), None)
    if count is not None:
        raise ConfigError(
            f"--arms takes arm names, not a count: for {count} arms write --n-arms {count}"
        )
    raise ConfigError(
        f"--arms {','.join(names)}: arm names need SOURCE (or a --like table); the number "
        "of arms is --n-arms"
    )


def _printed_json(result: object, json_: bool) -> bool:
    """Print `result` as JSON when --json was given; say whether it was."""
    if json_:
        emit(result)
    return json_
