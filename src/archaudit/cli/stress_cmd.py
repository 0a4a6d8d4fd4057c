"""`archaudit stress AUDIT`: the learning-rate sweep and depth stress of every arm, judged."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from archaudit.cli.app import app
from archaudit.cli.audit_cmd import Overrides, RunsDir, show
from archaudit.cli.options import Json, Plugins, Quiet, emit, load_plugin_modules, quiet_output
from archaudit.formatting import num, pvalue

if TYPE_CHECKING:
    from archaudit.audit.stress_result import StressResult


@app.command("stress")
def stress(
    audit: Annotated[Path, typer.Argument(help="The audit file (TOML); its [stress] section.")],
    plan_only: Annotated[
        bool, typer.Option("--plan", help="Print the sweep and its cost; train nothing.")
    ] = False,
    executor: Annotated[str | None, typer.Option("--executor", help="local | ray | slurm.")] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="Runs at the same time.")] = None,
    overrides: Overrides = None,
    runs_dir: RunsDir = None,
    json_: Json = False,
    quiet: Quiet = False,
    plugin: Plugins = None,
) -> None:
    """Sweep every arm's peak learning rate (and depth) at small scale, log the signals that
    forecast instability, and judge each arm against the baseline: LR sensitivity (Wortsman et
    al. 2023), largest stable rate, `more-fragile` / `more-robust` / `within-noise`. Results go
    to runs/AUDIT/_stress/stress.json and the report's stability section."""
    from archaudit.audit.spec import load_audit
    from archaudit.audit.stress import STRESS_DIR, run_stress, stress_plan
    from archaudit.audit.stress_result import RESULT_FILE, analyse, write_result

    quiet_output(quiet, json_)
    load_plugin_modules(plugin)
    spec = load_audit(audit, overrides or (), runs_dir=runs_dir)
    if plan_only:
        plan = stress_plan(spec)
        emit({"cost": plan.cost_line()}) if json_ else Console().print(plan.cost_line())
        return
    plan = run_stress(spec, executor=executor, workers=workers, live=not (quiet or json_))
    result = analyse(plan)
    path = spec.audit_dir / STRESS_DIR / RESULT_FILE
    write_result(result, path)
    if json_:
        emit(result.to_json())
        return
    print_result(result)
    Console().print(f"{result.cost}\nstored in {path}")


def print_result(result: StressResult) -> None:
    """The per-arm table, then the forecast backtest."""
    verdicts = {v.arm: v for v in result.verdicts}
    table = Table(title=f"stress test of {result.audit} at scale {result.scale}")
    columns = ("arm", "LR sensitivity [95% CI]", "largest stable LR [seeds]", "best LR")
    for column in (*columns, "unstable runs", "p (sens, stab, Holm)", "verdict"):
        table.add_column(column, justify="left" if column in ("arm", "verdict") else "right")
    for arm in result.arms:
        v = verdicts.get(arm.arm)
        lo, hi = arm.sensitivity_interval
        low, high = arm.largest_stable_range
        ps = "" if v is None else f"{_p(v.p_sensitivity_adjusted)}, {_p(v.p_stability_adjusted)}"
        table.add_row(
            arm.arm,
            f"{num(arm.sensitivity, 3)} [{num(lo, 3)}, {num(hi, 3)}]",
            f"{_lr(arm.largest_stable_lr)} [{_lr(low)}, {_lr(high)}]",
            _lr(arm.best_lr),
            f"{sum(arm.unstable)}/{arm.seeds * len(arm.lrs)}",
            ps,
            "(reference)" if v is None else v.verdict,
        )
    show(table)
    if result.verdicts:
        v = result.verdicts[0]
        Console().print(
            f"{v.correction} over {2 * len(result.verdicts)} tests: {v.error_rate} ≤ {v.alpha:g}"
        )
    forecast = Table(title="forecast backtest (fit of the signal's growth over steps)")
    for column in ("signal", "threshold", "broke", "warned in time", "median lead (steps)"):
        forecast.add_column(column, justify="right")
    forecast.add_column("false alarms", justify="right")
    for b in result.backtests:
        forecast.add_row(
            b.signal,
            f"{b.threshold:g}",
            str(b.broke),
            str(b.warned_in_time),
            num(b.median_lead, 3),
            f"{b.false_alarms}/{b.stable}",
        )
    show(forecast)


def _p(value: float | None) -> str:
    return "–" if value is None else pvalue(value)


def _lr(value: float | None) -> str:
    return "none" if value is None else f"{value:.3g}"
