"""Audit commands: `init`, `plan`, `run`, `run-one`, `status`, `tune-baseline`,
`rerun`, `demo`. Each one is a thin face over `archaudit.audit`."""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from archaudit.audit.launcher.launch import RunOptions
from archaudit.audit.planning.budget import DEFAULT_PROBE_BUDGET
from archaudit.audit.planning.effects import PlannedEffects
from archaudit.audit.setup.settle import SettleOptions
from archaudit.audit.setup.spec import ExecutorSpec, SeedSpec
from archaudit.cli.base.app import app
from archaudit.cli.base.options import (
    Device,
    Flags,
    Plugins,
    emit,
    in_range,
    load_plugin_modules,
    output_flags,
    with_flags,
)
from archaudit.cli.report_cmd import report_audit
from archaudit.formatting import VALUE_DIGITS, num, pvalue, signed
from archaudit.names import BASELINE
from archaudit.ranges import Range

if TYPE_CHECKING:
    from archaudit.audit.execute.coordinator import AuditOutcome
    from archaudit.audit.execute.sequential import SettledAudit
    from archaudit.audit.grid.plan import Plan
    from archaudit.audit.planning.estimate import (
        CostedRun,
        FixedCost,
        PlanSummary,
        RunCost,
        SequentialCost,
        SequentialEstimate,
    )
    from archaudit.audit.results.findings import Findings
    from archaudit.stats import Judgement
    from archaudit.stats.judging.loop import LoopFamily
    from archaudit.stats.simulation.sequential import SequentialRule

Overrides = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override one audit value, e.g. --set recipe.lr=1e-3 (repeatable)."),
]
RunsDir = Annotated[
    Path | None,
    typer.Option(
        "--runs-dir",
        # rich's markup would read "[...]" and "<audit>" as tags: escape the bracket, spell
        # the rest.
        help="Where runs/\\<audit>/ goes \\[default: runs/ beside the audit file].",
    ),
]
Strict = Annotated[bool, typer.Option("--strict", help="Protocol warnings (R5–R7) become errors.")]
Probe = Annotated[
    bool,
    typer.Option("--probe/--no-probe", help="Time a few training steps for the time estimate."),
]
# Flags that stand for a key of the audit file: each becomes its `--set` text, so the file's
# own classes check it, and a flag and its `--set` cannot disagree.
Executor = Annotated[
    list[str],
    Flags(
        ExecutorSpec,
        ("kind", "workers", "stale_after_s"),
        section="executor",
        unset="the audit file's",
    ),
]
AuditTracker = Annotated[
    list[str], Flags(RunOptions, ("tracker",), section="", unset="the audit file's `tracker`")
]
MaxSeeds = Annotated[
    list[str], Flags(SeedSpec, ("max",), section="seeds", unset="the audit file's seeds.max")
]
UntilSettled = Annotated[
    bool,
    typer.Option(
        "--until-settled",
        help='The sequential design (as [seeds] policy = "sequential"): `run` adds seeds until '
        "the verdicts settle; `plan` also estimates its runs and time.",
    ),
]
SEQUENTIAL = 'seeds.policy="sequential"'
ProbeBudgetOption = Annotated[
    float,
    typer.Option(
        "--probe-budget",
        metavar="SECONDS",
        help="Seconds from the plan's start after which no probe starts; what is left is "
        "estimated from FLOPs and a reference step (shown ≈) and measured by a later plan "
        "\\[default: 60].",
        callback=in_range(0),
    ),
]


def show(table: Table) -> None:
    """Print a table whole: on a terminal at its width, in a pipe or file as wide as it needs
    (rich would squeeze it to 80 columns)."""
    console = Console()
    if not console.is_terminal:
        unbounded = console.options.update_width(sys.maxsize)
        console = Console(width=console.measure(table, options=unbounded).maximum)
    console.print(table)


AuditFile = Annotated[Path, typer.Argument(help="The audit file (TOML).")]
SUITE_NAMES = ("audit2026", "foundations", "modern", "narang2021", "olmpool")
"""The suites of mods/suites.py, spelled here so that --help needs no import of the catalogue
(a test checks that they agree)."""
AuditTarget = Annotated[
    Path, typer.Argument(help="The audit file or its directory (runs/\\<audit>).")
]


@app.command()
@output_flags
def init(
    path: Annotated[Path, typer.Argument(help="The audit file to write.")] = Path("audit.toml"),
    arms: Annotated[
        list[str] | None,
        typer.Option(
            "--arms",
            metavar="ARMS",
            help="The audit's arms (repeatable or comma-separated): modifications, compositions "
            f"(a+b) or suite:NAME for a modification suite ({', '.join(SUITE_NAMES)}) "
            "\\[default: four example arms].",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    json_: bool = False,
) -> None:
    """Write a commented starter audit file."""
    from archaudit.audit.setup.starter import DEFAULT_ARMS, write_starter

    chosen = [name for value in arms or () for name in value.split(",") if name]
    written = write_starter(path, arms=chosen or DEFAULT_ARMS, force=force)
    if json_:
        emit({"written": written, "next": f"archaudit plan {written}"})  # a command, as said
        return
    typer.echo(
        f"wrote {written}; next: archaudit plan {written} (the grid, its time and power; "
        f"--no-probe skips the timing)"
    )


@app.command()
@output_flags
@with_flags
def plan(
    audit: AuditFile,
    *,
    overrides: Overrides = None,
    runs_dir: RunsDir = None,
    strict: Strict = False,
    probe: Probe = True,
    probe_budget: ProbeBudgetOption = DEFAULT_PROBE_BUDGET,
    json_: bool = False,
    plugin: Plugins = None,
    until_settled: UntilSettled = False,
    max_seeds: MaxSeeds,
    assumed: Annotated[PlannedEffects, Flags(PlannedEffects)],
) -> None:
    """Show the grid (arms × scales × seeds), parameters, tokens and estimated training time.
    With `--until-settled`, also the expected runs and time of the sequential design next to
    the fixed design with the same power. Writes nothing."""
    started = time.perf_counter()  # the probe's budget counts the plan's whole time
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.planning.estimate import plan_summary
    from archaudit.audit.setup.protocol import warn_notes
    from archaudit.audit.setup.spec import load_audit

    load_plugin_modules(plugin)
    settings = [*(overrides or ()), *max_seeds, *([SEQUENTIAL] if until_settled else [])]
    grid = make_plan(load_audit(audit, settings, runs_dir=runs_dir), strict=strict)
    assumed = assumed.check(grid)
    summary = plan_summary(grid, probe=probe, probe_budget=probe_budget, started=started)
    if grid.spec.seeds.policy == "sequential":
        estimate = _sequential_estimate(grid, summary, assumed)
        summary = dataclasses.replace(summary, sequential=estimate)
    if json_:
        emit(summary.to_json())
        return
    warn_notes(grid.notes)
    table = Table(title=f"audit {grid.spec.name!r} → {grid.audit_dir}")
    for column in ("arm", "family", "scale", "seeds", "params", "tokens", "time"):
        table.add_column(column, justify="left" if column in ("arm", "family") else "right")
    groups: dict[tuple[str, str], list[CostedRun]] = {}
    for costed in summary.runs:
        groups.setdefault((costed.run.arm, costed.run.scale), []).append(costed)
    for (arm, scale), runs in groups.items():
        first, seconds = runs[0], runs[0].cost.seconds
        table.add_row(
            arm + (" (tuned)" if first.run.tuned else ""),
            first.run.family,
            scale,
            str(len(runs)),
            _params_cell(first.cost),
            f"{first.cost.tokens:,}",
            "-" if seconds is None else f"{'≈' * first.cost.approx}{seconds * len(runs):,.0f} s",
        )
    show(table)

    baselines = {run.arm for run in grid.runs if run.mods == BASELINE}
    arms = {arm for arm, _ in groups} - baselines
    base = BASELINE if len(baselines) == 1 else f"{len(baselines)} baselines"
    scales = len(grid.spec.scales)
    line = f"{base} + {len(arms)} arm{'s' * (len(arms) != 1)} × {scales} scale{'s' * (scales != 1)}"
    line += " × seeds "
    line += f"({_seed_counts(groups)}) = {summary.total_runs} runs"
    if summary.estimated_wall_s is not None and summary.estimated_cpu_s is not None:
        minutes, cpu = summary.estimated_wall_s / 60, summary.estimated_cpu_s / 60
        line += f"; about {minutes:.1f} min{_minutes_range(summary.estimated_wall_range_s)}"
        line += f" on {summary.workers} workers ({cpu:.1f} CPU-min: start-up, compilation,"
        line += " training, validation and evaluation, measured here and read at this"
        line += " machine's speed now; the range: its speed's spread now)"
        line += _loop_costs(summary)
        line += _approx_note(summary)
    Console().print(line)
    from archaudit.audit.planning.power_plan import plan_power

    for family in plan_power(grid, assumed.sigma):
        Console().print("\n".join(family.lines()))
    if summary.sequential is not None:
        Console().print(_sequential_line(summary.sequential))


def _loop_costs(summary: PlanSummary) -> str:
    """ "; counted beside the runs: the audit's start 4.1 s, 0.3 s of the coordinator's work
    per run, 1.9 s per judgement between rounds and 6.0 s at its end (measured here)" ("" without
    the probe)."""
    if summary.run_overhead_s is None or summary.round_overhead_s is None:
        return ""
    how = "≈: estimated from the reference step" if summary.overheads_approx else "measured here"
    return (
        f"; counted beside the runs: the audit's start {summary.audit_start_s or 0.0:.1f} s, "
        f"{summary.run_overhead_s:.1f} s of the coordinator's work per run and "
        f"{summary.round_overhead_s:.1f} s per judgement between rounds and "
        f"{summary.finish_s or 0.0:.1f} s at its end (the last judgement, the tables and the "
        f"report; {how})"
    )


def _approx_note(summary: PlanSummary) -> str:
    """ "; ≈: 80 of 126 runs' times estimated from FLOPs ..." ("" when all were measured)."""
    if not summary.approx_runs:
        return ""
    return (
        f"; ≈: {summary.approx_runs} of {summary.total_runs} runs' times estimated from their "
        f"FLOPs against what was measured and the reference step (the probe's budget, "
        f"{summary.probe_budget_s or 0:g} s from the plan's start, ran out: a later plan "
        "measures more, or raise --probe-budget)"
    )


def _minutes_range(seconds: tuple[float, float] | None) -> str:
    """ " (4.9–6.8)": a wall time's range in minutes ("" without one)."""
    return "" if seconds is None else f" ({seconds[0] / 60:.1f}–{seconds[1] / 60:.1f})"


def _params_cell(cost: RunCost) -> str:
    """Total parameters, and the active ones beside them where they differ (MoE, sharing)."""
    total, active = cost.params, cost.active_params
    return f"{total:,}" if total == active else f"{total:,} ({active:,} active)"


def _seed_counts(groups: dict[tuple[str, str], list[CostedRun]]) -> str:
    """ "3 for baseline, 1 for 7 arms": the seeds per arm, arms with the same count together."""
    seeds: dict[str, int] = {}
    for (arm, _), runs in groups.items():
        seeds[arm] = max(seeds.get(arm, 0), len(runs))
    by_count: dict[int, list[str]] = {}
    for arm, count in seeds.items():
        by_count.setdefault(count, []).append(arm)
    parts = [
        f"{count} for {', '.join(arms) if len(arms) <= 2 else f'{len(arms)} arms'}"
        for count, arms in sorted(by_count.items(), reverse=True)
    ]
    return "; ".join(parts)


def _sequential_estimate(
    grid: Plan, summary: PlanSummary, assumed: PlannedEffects
) -> SequentialEstimate:
    from archaudit.audit.planning.estimate import sequential_estimate

    return sequential_estimate(
        grid,
        effects=assumed.effects,
        sigma=assumed.sigma,
        seconds_per_run=summary.mean_run_seconds,
        speed_range=summary.speed_range or (1.0, 1.0),
        workers=summary.workers,
        audit_start_s=summary.audit_start_s or 0.0,
        loop=(
            summary.run_overhead_s or 0.0,
            summary.round_overhead_s or 0.0,
            summary.finish_s or 0.0,
        ),
    )


def _sequential_line(estimate: SequentialEstimate) -> str:
    def cost(design: SequentialCost | FixedCost, runs: str, wall: str) -> str:
        minutes = "" if design.wall_s is None else f", about {design.wall_s / 60:.1f} min{wall}"
        power = "" if design.power is None else f", power {design.power:.2f}"
        return f"{runs} runs{power}{minutes}"

    seq, fixed = estimate.sequential, estimate.fixed
    low, high = seq.runs_range
    runs = f"{seq.expected_runs:.0f} ({low:.0f}–{high:.0f} in 80% of simulated loops)"
    effects = estimate.assumed or estimate.effects_from
    return (
        f"--until-settled (≤ {estimate.max_seeds} seeds per arm, effects: {effects}): "
        f"about {cost(seq, runs, _minutes_range(seq.wall_range_s))}"
        f" expected; the fixed design with the same power, {fixed.seeds_per_arm} seeds per "
        f"arm: {cost(fixed, f'{fixed.runs:.0f}', '')}"
    )


@app.command()
@output_flags
@with_flags
def run(
    audit: AuditFile,
    *,
    executor: Executor,
    tracker: AuditTracker,
    until_settled: UntilSettled = False,
    max_seeds: MaxSeeds,
    budget: Annotated[SettleOptions, Flags(SettleOptions, ("budget_runs", "budget_hours"))],
    overrides: Overrides = None,
    runs_dir: RunsDir = None,
    strict: Strict = False,
    json_: bool = False,
    quiet: bool = False,
    plugin: Plugins = None,
) -> None:
    """Run (or resume) every run of the audit. Finished runs are skipped, unfinished ones resume
    from their checkpoints, runs another worker holds are waited for. With `--until-settled` (or
    `[seeds] policy = "sequential"`), seeds are added round by round until every primary verdict
    is settled or the budget is spent. Exit 1 if any run failed."""
    from archaudit.audit.execute.coordinator import run_audit
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.setup.spec import load_audit
    from archaudit.progress import log

    load_plugin_modules(plugin)
    live = not (quiet or json_)
    settings = [*(overrides or ()), *executor, *tracker, *max_seeds]
    settings += [SEQUENTIAL] if until_settled else []
    grid = make_plan(load_audit(audit, settings, runs_dir=runs_dir), strict=strict)
    with resume_hint():
        document: dict[str, object] = {}
        if grid.spec.seeds.policy == "sequential":
            from archaudit.audit.execute.sequential import (
                describe_stop,
                run_until_settled,
                settle_options,
            )
            from archaudit.audit.results.findings import report_findings

            options = settle_options(
                grid, budget_runs=budget.budget_runs, budget_hours=budget.budget_hours
            )
            settled = run_until_settled(grid, options, live=live)
            found = report_findings(settled.audit.audit_dir)
            if not json_:
                show_with_limits(settled_tables(settled, found.judgements))
            stop = describe_stop(settled)
            log(f"{settled.rounds} round(s), {settled.runs} runs: stopped because {stop}")
            document["sequential"] = sequential_document(settled)
            report_outcome(settled.audit, json_, document, found)
        else:
            report_outcome(run_audit(grid, live=live), json_, document)


@contextlib.contextmanager
def resume_hint() -> Iterator[None]:
    """Ctrl-C or SIGTERM: once the workers saved their steps (the coordinator says which),
    print the command that resumes and exit 130, as a shell does for SIGINT."""
    from archaudit.progress import log

    try:
        yield
    except KeyboardInterrupt:
        log(f"resume with: {shlex.join(['archaudit', *sys.argv[1:]])}")
        raise typer.Exit(130) from None


def sequential_document(settled: SettledAudit) -> dict[str, object]:
    """What `--json` says about a sequential audit: rounds, runs, why it stopped, the verdicts."""
    return {
        "rounds": settled.rounds,
        "runs": settled.runs,
        "stop": settled.stop,
        "families": settled.families,
    }


def report_outcome(
    outcome: AuditOutcome,
    json_: bool,
    extra: dict[str, object],
    found: Findings | None = None,
) -> None:
    """The end of `run` and `demo`: counts and failures as a log line or in the JSON document,
    then the report (from `found`, the record the verdict tables were read from, when given);
    exit 1 if any run failed (after the document is printed)."""
    from archaudit.progress import log

    if json_:
        emit({"audit_dir": outcome.audit_dir, "counts": outcome.counts} | extra | {
            "failed": outcome.failed, "results": outcome.results
        })  # fmt: skip
    else:
        counts = ", ".join(f"{n} {state}" for state, n in sorted(outcome.counts.items()))
        log(f"{counts} → {outcome.results}")
        for path, error in outcome.failed.items():
            typer.secho(f"failed: {path}: {error}", err=True, fg="red")
    from archaudit.audit.launcher.executors import (
        cpu_cores,  # the runs are over: draw on every core
    )

    report_audit(outcome.audit_dir, err=json_, workers=cpu_cores(), found=found)
    if outcome.failed:
        raise typer.Exit(1)


def show_with_limits(tables: Sequence[tuple[Table, Judgement | None]]) -> None:
    """Each end table of `run` and `demo`, with what limits its verdicts under it: `stats`'s
    "limits of ARM: ..." lines (`ArmVerdict.caveats`, the report's and the JSON's words)."""
    from archaudit.cli.stats.verdicts import limit_lines

    for table, judgement in tables:
        show(table)
        for line in limit_lines(judgement) if judgement else ():
            Console().print(line, highlight=False, markup=False, soft_wrap=True)
    if tables:
        from archaudit.glossary import POINTER

        Console().print(POINTER, highlight=False, markup=False, soft_wrap=True)


def settled_tables(
    settled: SettledAudit, judged: Sequence[Judgement]
) -> list[tuple[Table, Judgement | None]]:
    """The loop's families as tables, each beside its judgement as `stats` reads it back
    (`judged`: the audit's findings, `judge_with_loop`: the same verdicts, with their grades
    and duties)."""
    by_family = {(j.metric, j.scale, j.baseline): j for j in judged}
    return [
        (settled_table(f, settled.rule), by_family.get((f.metric, f.scale, f.baseline)))
        for f in settled.families
    ]


def settled_table(family: LoopFamily, rule: SequentialRule) -> Table:
    """One sequential family under its design's
    measured error rate and MDE: seeds, Δ, the last look's t and p beside the threshold that p
    was compared with (its look's boundary at the family's Holm level), the verdict and why the
    arm stopped."""
    from archaudit.stats.simulation.sequential import sequential_design_rate

    design = sequential_design_rate(len(family.arms), rule)
    table = Table(
        title=f"{family.metric} at scale {family.scale} (sequential, Δ > 0 means better): "
        f"σ = {num(family.sigma)} (df {family.sigma_dof}), baseline n = {family.baseline_seeds}\n"
        + design.describe(),
        title_justify="left",
    )
    for column in ("arm", "seeds", "Δ", "t", "p", "threshold", "verdict", "stopped"):
        table.add_column(column, justify="left" if column in ("arm", "verdict") else "right")
    for arm in family.arms:  # held to the design's rate when the loop wrote them
        table.add_row(
            arm.arm, str(arm.seeds), signed(arm.delta), signed(arm.t), pvalue(arm.p),
            pvalue(arm.threshold), arm.verdict, arm.stopped,
        )  # fmt: skip
    return table


@app.command("run-one")
@output_flags
@with_flags
def run_one(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (with run.json).")],
    *,
    options: Annotated[RunOptions, Flags(RunOptions)],
    train_only: Annotated[
        bool, typer.Option("--train-only", help="Internal: one torchrun rank.")
    ] = False,
    json_: bool = False,
    plugin: Plugins = None,
) -> None:
    """Run one run end to end (train → evaluate → DONE); what every executor launches."""
    from archaudit.audit.execute import runner
    from archaudit.progress import log

    load_plugin_modules(plugin)
    if train_only:
        runner.train_only(run_dir, options)
        state = "trained"
    else:
        state = runner.run_one(run_dir, options)
    if json_:
        emit({"run_dir": run_dir, "state": state})
    else:
        log(f"{run_dir}: {state}")


@app.command()
@output_flags
def status(
    audit: AuditTarget,
    json_: bool = False,
    report: Annotated[
        bool, typer.Option("--report", help="Also write a (partial) report.html.")
    ] = False,
) -> None:
    """Where the audit stands: runs per arm and state (refreshes the CSV and Parquet exports)."""
    from archaudit.audit.execute.live import arm_table, progress_of
    from archaudit.audit.grid.store import refresh_export
    from archaudit.audit.planning.estimate import time_left
    from archaudit.audit.setup.spec import resolve_audit_dir

    audit_dir = resolve_audit_dir(audit)
    statuses = refresh_export(audit_dir)
    if report:
        report_audit(audit_dir, err=json_)
    done, total = progress_of(statuses)
    left = time_left(audit_dir, statuses)
    if json_:
        runs = [
            {"path": s.spec.path, "id": s.spec.run_id, "state": s.state, "step": s.step}
            | {"error": s.error, "result": s.result.to_json() if s.result else None}
            for s in statuses
        ]
        states = Counter(s.state for s in statuses)
        emit({"audit_dir": audit_dir, "states": states, "steps_done": done, "steps_total": total}
             | {"seconds_left": left, "runs": runs})  # fmt: skip
        return
    show(arm_table(statuses, title=str(audit_dir)))
    line = f"{done:,} of {total:,} training steps ({done / max(total, 1):.0%})"
    if left is not None:
        line += f"; about {left / 60:.1f} min left (plan's estimate)"
    Console().print(line)


@dataclass(frozen=True, kw_only=True)
class Sweep:
    """The points `tune-baseline` trains, and whether it writes its choice."""

    lr: tuple[float, ...] = field(default=(), metadata={"range": Range(0, low_open=True)})
    """Peak LRs [default: current × ¼…4]."""
    warmup: tuple[float, ...] = field(default=(), metadata={"range": Range(0, 1, high_open=True)})
    """Warmup fractions to sweep too."""
    seeds: int = field(default=1, metadata={"range": Range(1)})
    """Seeds per sweep point."""
    write: bool = field(default=True, metadata={"flag": "--write/--dry-run"})
    """Write the choice into AUDIT."""


@app.command("tune-baseline")
@output_flags
@with_flags
def tune_baseline(
    audit: Annotated[Path, typer.Argument(help="The audit file (TOML); its [recipe] is updated.")],
    *,
    executor: Executor,
    sweep_points: Annotated[Sweep, Flags(Sweep)],
    overrides: Overrides = None,
    runs_dir: RunsDir = None,
    json_: bool = False,
    quiet: bool = False,
    plugin: Plugins = None,
) -> None:
    """Sweep the baseline's peak LR (and warmup) at the smallest scale; write the best into the
    shared recipe. Arms are never tuned."""
    from archaudit.audit.execute.tune import tune_baseline as sweep

    load_plugin_modules(plugin)
    outcome = sweep(
        audit,
        lrs=sweep_points.lr,
        warmups=sweep_points.warmup,
        seeds=sweep_points.seeds,
        overrides=[*(overrides or ()), *executor],
        runs_dir=runs_dir,
        write=sweep_points.write,
        live=not (quiet or json_),
    )
    if json_:
        points = [dataclasses.asdict(p) | {"mean": p.mean} for p in outcome.points]
        emit({"scale": outcome.scale, "best": outcome.best, "points": points}
             | {"audit_file": outcome.audit_file, "record": outcome.record})  # fmt: skip
        return
    table = Table(title=f"baseline sweep at scale {outcome.scale}")
    for column in ("lr", "warmup_frac", "val_loss (mean)", ""):
        table.add_column(column, justify="right")
    for point in sorted(outcome.points, key=lambda p: (p.lr, p.warmup_frac)):
        mark = "← chosen" if point == outcome.best else ""
        table.add_row(
            f"{point.lr:g}", f"{point.warmup_frac:g}", num(point.mean, VALUE_DIGITS), mark
        )
    console = Console()
    show(table)
    where = f"written into {outcome.audit_file}" if outcome.audit_file else "not written"
    console.print(f"lr = {outcome.best.lr:g} ({where}); sweep recorded in {outcome.record}")


@app.command()
@output_flags
def rerun(
    run_dir: Annotated[Path, typer.Argument(help="A finished run directory.")],
    device: Device = "",
    json_: bool = False,
    plugin: Plugins = None,
) -> None:
    """Retrain a finished run and compare its loss curve and final metrics with the stored
    ones (max absolute difference; bit-identical when all are 0)."""
    from archaudit.audit.execute.rerun import rerun as retrain

    load_plugin_modules(plugin)
    report = retrain(run_dir, device=device)
    if json_:
        emit(report.to_json())
        return
    console = Console()
    for name, diffs in (("curve", report.curve_max_abs_diff), ("metric", report.metric_abs_diff)):
        for key, value in diffs.items():
            console.print(f"{name} {key}: max |Δ| = {num(value)}")
    verdict = "bit-identical" if report.bit_identical else f"max |Δ| = {num(report.max_abs_diff)}"
    console.print(f"{report.steps_compared} steps compared: {verdict} → {report.rerun_dir}")


@app.command()
@output_flags
@with_flags
def demo(
    *,
    runs_dir: RunsDir = None,
    executor: Executor,
    overrides: Overrides = None,
    json_: bool = False,
    quiet: bool = False,
    plugin: Plugins = None,
) -> None:
    """The built-in audit: baseline + 4 modifications at two tiny scales on the embedded corpus,
    seeds added where a verdict could still change (25 runs in 3 rounds: about 3 minutes on two
    idle CPU cores, longer on a busy machine), then the
    verdict tables under the design's measured error rate."""
    from archaudit.audit.execute.demo import run_demo, verdict_table

    load_plugin_modules(plugin)
    with resume_hint():
        outcome = run_demo(
            runs_dir or Path("runs"),
            overrides=[*(overrides or ()), *executor],
            live=not (quiet or json_),
        )
    settled = outcome.settled
    if not json_:
        tables = (
            settled_tables(settled, outcome.findings.judgements)
            if settled
            else [(verdict_table(j), j) for j in outcome.judgements]
        )
        show_with_limits(tables)
        runs = f"{settled.runs} runs in {settled.rounds} rounds, " if settled else ""
        Console().print(
            f"demo audit: {len(tables)} verdict tables, {runs}{outcome.seconds / 60:.1f} min; "
            f"results in {outcome.audit.results}"
        )
    extra: dict[str, object] = {"judgements": outcome.judgements, "seconds": outcome.seconds}
    if settled:
        extra["sequential"] = sequential_document(settled)
    report_outcome(outcome.audit, json_, extra, outcome.findings)
