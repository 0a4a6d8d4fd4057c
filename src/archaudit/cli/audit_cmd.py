"""Audit commands: `init`, `plan`, `run`, `run-one`, `status`, `index`, `tune-baseline`,
`rerun`, `demo`. Each one is a thin face over `archaudit.audit`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from archaudit.cli import app

OVERRIDES = typer.Option(
    [], "--set", help="Override one audit value, e.g. --set recipe.lr=1e-3 (repeatable)."
)
RUNS_DIR = typer.Option(
    None, "--runs-dir", help="Where runs/<audit>/ goes [default: runs/ beside the audit file]."
)
STRICT = typer.Option(False, "--strict", help="Protocol warnings (R5–R7) become errors.")
QUIET = typer.Option(False, "--quiet", "-q", help="No live table, progress bars or log lines.")


def show(table: Table) -> None:
    """Print a table whole: on a terminal at its width, in a pipe or file as wide as it needs
    (rich would squeeze it to 80 columns)."""
    console = Console()
    if not console.is_terminal:
        unbounded = console.options.update_width(sys.maxsize)
        console = Console(width=console.measure(table, options=unbounded).maximum)
    console.print(table)


AUDIT_FILE = typer.Argument(..., help="The audit file (TOML).")
AUDIT_TARGET = typer.Argument(..., help="The audit file or its directory (runs/<audit>).")


@app.command()
def init(
    path: Path = typer.Argument(Path("audit.toml"), help="The audit file to write."),
    suite: str | None = typer.Option(None, "--suite", help="Arms = this modification suite."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a commented starter audit file."""
    from archaudit.audit.starter import write_starter

    written = write_starter(path, suite=suite, force=force)
    typer.echo(f"wrote {written}; next: archaudit plan {written}")


@app.command()
def plan(
    audit: Path = AUDIT_FILE,
    overrides: list[str] = OVERRIDES,
    runs_dir: Path | None = RUNS_DIR,
    strict: bool = STRICT,
    probe: bool = typer.Option(True, "--probe/--no-probe", help="Time a few training steps."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
) -> None:
    """Show the grid (arms × scales × seeds), parameters, tokens and estimated training time.
    Writes nothing."""
    from archaudit.audit.estimate import plan_summary
    from archaudit.audit.plan import make_plan
    from archaudit.audit.protocol import warn_notes
    from archaudit.audit.spec import load_audit

    grid = make_plan(load_audit(audit, overrides, runs_dir=runs_dir), strict=strict)
    summary = plan_summary(grid, probe=probe)
    if json_out:
        typer.echo(json.dumps(summary))
        return
    warn_notes(grid.notes)
    table = Table(title=f"audit {grid.spec.name!r} → {grid.audit_dir}")
    for column in ("arm", "family", "scale", "seeds", "params", "tokens", "train time"):
        table.add_column(column, justify="left" if column in ("arm", "family") else "right")
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in summary["runs"]:
        groups.setdefault((run["arm"], run["scale"]), []).append(run)
    for (arm, scale), runs in groups.items():
        seconds = runs[0]["train_seconds"]
        table.add_row(
            arm + (" (tuned)" if runs[0]["tuned"] else ""),
            runs[0]["family"],
            scale,
            str(len(runs)),
            f"{runs[0]['params']:,}",
            f"{runs[0]['tokens']:,}",
            "-" if seconds is None else f"{seconds * len(runs):,.0f} s",
        )
    show(table)
    line = f"{len({a for a, _ in groups})} arms × {len(grid.spec.scales)} scales × seeds"
    line += f" = {summary['total_runs']} runs"
    if summary["estimated_wall_s"] is not None:
        minutes = summary["estimated_wall_s"] / 60
        line += f"; about {minutes:.1f} min of training on {summary['workers']} workers"
    Console().print(line + " (evaluation not included)")


@app.command()
def run(
    audit: Path = AUDIT_FILE,
    executor: str | None = typer.Option(None, "--executor", help="local | ray | slurm."),
    workers: int | None = typer.Option(None, "--workers", help="Runs at the same time."),
    tracker: str | None = typer.Option(None, "--tracker", help="tensorboard | wandb."),
    overrides: list[str] = OVERRIDES,
    runs_dir: Path | None = RUNS_DIR,
    strict: bool = STRICT,
    quiet: bool = QUIET,
) -> None:
    """Run (or resume) every run of the audit. Finished runs are skipped, unfinished ones resume
    from their checkpoints, runs another worker holds are waited for. Exit 1 if any run failed."""
    from archaudit.audit.coordinator import run_audit
    from archaudit.audit.plan import make_plan
    from archaudit.audit.spec import load_audit
    from archaudit.progress import log, set_quiet

    set_quiet(quiet)
    grid = make_plan(load_audit(audit, overrides, runs_dir=runs_dir), strict=strict)
    outcome = run_audit(grid, executor=executor, workers=workers, tracker=tracker, live=not quiet)
    counts = ", ".join(f"{n} {state}" for state, n in sorted(outcome.counts.items()))
    log(f"{counts} → {outcome.results}")
    for path, error in outcome.failed.items():
        typer.secho(f"failed: {path}: {error}", err=True, fg="red")
    if outcome.failed:
        raise typer.Exit(1)


@app.command("run-one")
def run_one(
    run_dir: Path = typer.Argument(..., help="A run directory (with run.json)."),
    threads: int = typer.Option(0, "--threads", help="Torch threads (0 = the recipe's)."),
    device: str = typer.Option("", "--device", help="Override recipe.device."),
    ranks: int = typer.Option(1, "--ranks", help="Processes; > 1 trains under torchrun."),
    tracker: str = typer.Option("", "--tracker", help="tensorboard | wandb."),
    heartbeat: float = typer.Option(15.0, "--heartbeat", help="Seconds between heartbeats."),
    stale_after: float = typer.Option(120.0, "--stale-after", help="Take over older claims."),
    train_only: bool = typer.Option(False, "--train-only", help="Internal: one torchrun rank."),
    quiet: bool = QUIET,
) -> None:
    """Run one run end to end (train → evaluate → DONE); what every executor launches."""
    from archaudit.audit import runner
    from archaudit.progress import log, set_quiet

    set_quiet(quiet)
    options = runner.RunOptions(
        threads=threads,
        device=device,
        ranks=ranks,
        tracker=tracker,
        heartbeat_s=heartbeat,
        stale_after_s=stale_after,
    )
    if train_only:
        runner.train_only(run_dir, options)
        return
    log(f"{run_dir}: {runner.run_one(run_dir, options)}")


@app.command()
def status(
    audit: Path = AUDIT_TARGET,
    json_out: bool = typer.Option(False, "--json", help="One JSON object per run."),
) -> None:
    """Where the audit stands: runs per arm and state (refreshes the index and CSV exports)."""
    from archaudit.audit.live import arm_table, progress_of
    from archaudit.audit.store import refresh_index, resolve_audit_dir

    audit_dir = resolve_audit_dir(audit)
    statuses = refresh_index(audit_dir)
    if json_out:
        for s in statuses:
            row = {"path": s.spec.path, "id": s.spec.run_id, "state": s.state, "step": s.step}
            typer.echo(json.dumps(row | {"error": s.error, "result": s.result}))
        return
    done, total = progress_of(statuses)
    console = Console()
    show(arm_table(statuses, title=str(audit_dir)))
    console.print(f"{done:,} of {total:,} training steps ({done / max(total, 1):.0%})")


@app.command()
def index(
    audit: Path = AUDIT_TARGET,
    rebuild: bool = typer.Option(False, "--rebuild", help="Start from an empty index file."),
) -> None:
    """Rescan the run directories into index.sqlite and export results.csv and items.csv."""
    from archaudit.audit.store import INDEX, RESULTS, refresh_index, resolve_audit_dir

    audit_dir = resolve_audit_dir(audit)
    statuses = refresh_index(audit_dir, rebuild=rebuild)
    typer.echo(f"{len(statuses)} runs → {audit_dir / INDEX}, {audit_dir / RESULTS}")


@app.command("tune-baseline")
def tune_baseline(
    audit: Path = typer.Argument(..., help="The audit file (TOML); its [recipe] is updated."),
    lr: list[float] = typer.Option([], "--lr", help="Peak LRs [default: current × ¼…4]."),
    warmup: list[float] = typer.Option([], "--warmup", help="Warmup fractions to sweep too."),
    seeds: int = typer.Option(1, "--seeds", help="Seeds per sweep point."),
    executor: str | None = typer.Option(None, "--executor", help="local | ray | slurm."),
    workers: int | None = typer.Option(None, "--workers", help="Runs at the same time."),
    write: bool = typer.Option(True, "--write/--dry-run", help="Write the choice into AUDIT."),
    overrides: list[str] = OVERRIDES,
    runs_dir: Path | None = RUNS_DIR,
    quiet: bool = QUIET,
) -> None:
    """Sweep the baseline's peak LR (and warmup) at the smallest scale; write the best into the
    shared recipe. Arms are never tuned."""
    from archaudit.audit.tune import tune_baseline as sweep
    from archaudit.progress import set_quiet

    set_quiet(quiet)
    outcome = sweep(
        audit,
        lrs=lr,
        warmups=warmup,
        seeds=seeds,
        overrides=overrides,
        runs_dir=runs_dir,
        executor=executor,
        workers=workers,
        write=write,
        live=not quiet,
    )
    table = Table(title=f"baseline sweep at scale {outcome.scale}")
    for column in ("lr", "warmup_frac", "val_loss (mean)", ""):
        table.add_column(column, justify="right")
    for point in sorted(outcome.points, key=lambda p: (p.lr, p.warmup_frac)):
        mark = "← chosen" if point == outcome.best else ""
        table.add_row(f"{point.lr:g}", f"{point.warmup_frac:g}", f"{point.mean:.4f}", mark)
    console = Console()
    show(table)
    where = f"written into {outcome.audit_file}" if outcome.audit_file else "not written"
    console.print(f"lr = {outcome.best.lr:g} ({where}); sweep recorded in {outcome.record}")


@app.command()
def rerun(
    run_dir: Path = typer.Argument(..., help="A finished run directory."),
    device: str = typer.Option("", "--device", help="Retrain on this device (default: same)."),
    json_out: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Retrain a finished run and compare its loss curve and final metrics with the stored
    ones (max absolute difference; bit-identical when all are 0)."""
    from archaudit.audit.rerun import rerun as retrain
    from archaudit.progress import set_quiet

    set_quiet(json_out)
    report = retrain(run_dir, device=device)
    if json_out:
        typer.echo(json.dumps(report.to_json()))
        return
    console = Console()
    for name, diffs in (("curve", report.curve_max_abs_diff), ("metric", report.metric_abs_diff)):
        for key, value in diffs.items():
            console.print(f"{name} {key}: max |Δ| = {value:.3g}")
    verdict = "bit-identical" if report.bit_identical else f"max |Δ| = {report.max_abs_diff:.3g}"
    console.print(f"{report.steps_compared} steps compared: {verdict} → {report.rerun_dir}")


@app.command()
def demo(
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir", help="Where runs/demo/ goes."),
    workers: int | None = typer.Option(None, "--workers", help="Runs at the same time."),
    overrides: list[str] = OVERRIDES,
    quiet: bool = QUIET,
) -> None:
    """The built-in audit: baseline + 4 modifications (2 seeds each) at two tiny scales on the
    embedded corpus (5–8 minutes on two CPU cores), then the verdict tables with the design's
    measured error rate."""
    from archaudit.audit.demo import run_demo, verdict_table
    from archaudit.progress import set_quiet

    set_quiet(quiet)
    outcome = run_demo(runs_dir, workers=workers, overrides=overrides, live=not quiet)
    console = Console()
    for judgement in outcome.judgements:
        show(verdict_table(judgement))
    console.print(
        f"demo audit: {len(outcome.judgements)} judgements in {outcome.seconds / 60:.1f} min; "
        f"results in {outcome.audit.results}"
    )
    if outcome.audit.failed:
        raise typer.Exit(1)
