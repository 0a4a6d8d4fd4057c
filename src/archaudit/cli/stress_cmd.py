"""`archaudit stress AUDIT`: the learning-rate sweep and depth stress of every arm, judged."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from archaudit.cli.audit_cmd import AuditFile, Executor, Overrides, Probe, RunsDir, show
from archaudit.cli.base.app import app
from archaudit.cli.base.options import (
    Plugins,
    emit,
    load_plugin_modules,
    output_flags,
    with_flags,
)
from archaudit.formatting import num, pvalue
from archaudit.progress import warn

if TYPE_CHECKING:
    from archaudit.audit.setup.spec import AuditSpec
    from archaudit.audit.stability.stress_power import TestPower
    from archaudit.audit.stability.stress_result import StressResult


@app.command("stress")
@output_flags
@with_flags
def stress(
    audit: AuditFile,
    plan_only: Annotated[
        bool, typer.Option("--plan", help="Print the sweep and its cost; train nothing.")
    ] = False,
    pilot: Annotated[
        Path | None,
        typer.Option(
            "--pilot",
            help="With --plan: a pilot's stored stress test (stress.json or its folder); says "
            "each declared test's power at stress.seeds and the seeds for 0.8. Default: the "
            "audit's own stored stress test, if any.",
        ),
    ] = None,
    *,
    executor: Executor,
    probe: Probe = True,
    overrides: Overrides = None,
    runs_dir: RunsDir = None,
    json_: bool = False,
    quiet: bool = False,
    plugin: Plugins = None,
) -> None:
    """Sweep every arm's peak learning rate (and depth) at small scale, log the signals that
    forecast instability, and judge each arm against the baseline: LR sensitivity (Wortsman et
    al. 2023), largest stable rate, `more-fragile` / `more-robust` / `within-noise`. Results go
    to runs/AUDIT/_stress/stress.json and the report's stability section."""
    from archaudit.audit.execute.stress_run import run_stress
    from archaudit.audit.planning.stress_time import stress_time
    from archaudit.audit.setup.spec import load_audit
    from archaudit.audit.stability.stress import STRESS_DIR, stress_plan
    from archaudit.audit.stability.stress_power import power_json
    from archaudit.audit.stability.stress_result import RESULT_FILE, analyse, write_result

    load_plugin_modules(plugin)
    spec = load_audit(audit, [*(overrides or ()), *executor], runs_dir=runs_dir)
    if plan_only:
        plan = stress_plan(spec)
        timed = stress_time(plan) if probe else None
        cost: dict[str, object] = {"cost": plan.cost_line(), **(timed.to_json() if timed else {})}
        power = plan.power_note()
        cost |= {"power": power} if power else {}
        powers = _pilot_power(spec, pilot or spec.audit_dir / STRESS_DIR / RESULT_FILE, pilot)
        cost |= {"pilot_power": power_json(powers)} if powers else {}
        line = "; ".join(str(cost[k]) for k in ("cost", "time") if k in cost)
        if json_:
            return emit(cost)
        Console().print(line)
        for p in powers:
            Console().print(p.line())
        if power:
            warn(power)
        return
    plan = run_stress(spec, live=not (quiet or json_))
    result = analyse(plan)
    path = spec.audit_dir / STRESS_DIR / RESULT_FILE
    write_result(result, path)
    if json_:
        emit(result.to_json())
        return
    print_result(result)
    Console().print(f"{result.cost}\nstored in {path}")


def _pilot_power(spec: AuditSpec, path: Path, named: Path | None) -> tuple[TestPower, ...]:
    """The power model's lines from the pilot at `path` (named, or the audit's own stored
    stress test when it exists and stores its runs; nothing otherwise)."""
    from archaudit.audit.stability.stress_power import plan_power, read_pilot
    from archaudit.audit.stability.stress_result import read_result

    if named is None and (not path.is_file() or not read_result(path).sweep_runs):
        return ()
    return plan_power(spec, read_pilot(path))


def print_result(result: StressResult) -> None:
    """The per-arm table, the depth stress, then the forecast backtest."""
    show(_arm_table(result))
    if result.verdicts:
        v = result.verdicts[0]
        Console().print(
            f"primary test (rank of breaks, loss and gradient norm at the upper half of the "
            f"grid vs the baseline's at the same rate): {v.correction} over {len(result.verdicts)} "
            f"arms, {v.error_rate} ≤ {v.alpha:g}; ΔS and unstable runs are secondary"
        )
    if result.logit_verdicts:
        show(_logit_table(result))
    if result.group is not None:
        Console().print(_group_line(result))
    if result.depth:
        show(_depth_table(result))
    for line in _depth_sensitivity_lines(result):
        Console().print(line)
    show(_backtest_table(result))


def _logit_table(result: StressResult) -> Table:
    table = Table(
        title="logit test (Wortsman et al. 2023: largest attention logit, final |log Z| at the "
        "upper half of the grid vs the baseline's; its own Holm family)"
    )
    for column in ("arm", "z attn logit", "z |log Z|", "p (Holm)", "verdict"):
        table.add_column(column, justify="left" if column in ("arm", "verdict") else "right")
    for v in result.logit_verdicts:
        z = v.z or (math.nan, math.nan)
        table.add_row(
            v.arm,
            num(z[0], 3),
            num(z[1], 3),
            f"{_p(v.p_adjusted)} ({v.measure or '–'})",
            v.verdict,
        )
    return table


def _depth_sensitivity_lines(result: StressResult) -> list[str]:
    """One line per depth-stress arm: ΔD, its p (Holm over those arms) and verdict."""
    return [
        f"depth sensitivity, {v.arm}: loss rise with depth {num(v.degradation, 3)} nats "
        f"(baseline {num(v.baseline_degradation, 3)}), ΔD {num(v.delta, 3)}, p {_p(v.p_adjusted)} "
        f"({v.correction} over {len(result.depth_sensitivity)}, {v.error_rate} ≤ {v.alpha:g}): "
        f"{v.verdict}"
        for v in result.depth_sensitivity
    ]


def _group_line(result: StressResult) -> str:
    g = result.group
    assert g is not None
    return (
        f"group test (declared fragile: {', '.join(g.fragile)}; against "
        f"{', '.join(g.others) or 'no other arm'}): {g.verdict}, p {_p(g.p)} "
        f"({g.measure or '–'}), one test, {g.error_rate} ≤ {g.alpha:g}"
    )


def _arm_table(result: StressResult) -> Table:
    verdicts = {v.arm: v for v in result.verdicts}
    table = Table(title=f"stress test of {result.audit} at scale {result.scale}")
    columns = ("arm", "LR sensitivity [95% CI]", "largest stable LR [seeds]", "best LR")
    for column in (*columns, "unstable runs", "p primary (Holm)", "p ΔS, unstable", "verdict"):
        table.add_column(column, justify="left" if column in ("arm", "verdict") else "right")
    for arm in result.arms:
        v = verdicts.get(arm.arm)
        lo, hi = arm.sensitivity_interval
        low, high = arm.largest_stable_range
        at_least = "≥ " if arm.censored else ""
        table.add_row(
            arm.arm,
            f"{num(arm.sensitivity, 3)} [{num(lo, 3)}, {num(hi, 3)}]",
            f"{at_least}{_lr(arm.largest_stable_lr)} [{_lr(low)}, {_lr(high)}]",
            _lr(arm.best_lr),
            f"{sum(arm.unstable)}/{sum(arm.runs)}",
            "" if v is None else f"{_p(v.p_primary_adjusted)} ({v.primary_measure or '–'})",
            "" if v is None else f"{_p(v.p_sensitivity)}, {_p(v.p_stability)}",
            "(reference)" if v is None else v.verdict,
        )
    return table


def _depth_table(result: StressResult) -> Table:
    verdicts = {v.arm: v for v in result.depth_verdicts}
    forecasts = {(f.arm, f.lr): f for f in result.depth_forecasts}
    table = Table(title="depth stress (the same width at more layers)")
    shown = _shown(result, "grad_norm")
    columns = ("arm", "layers", "LR", "unstable runs", "max attn logit", "max |log Z|")
    for column in (
        *columns,
        "max grad norm",
        "forecast depth (grad)" if shown else "forecast depth",
        "p (Holm)",
        "verdict",
    ):
        table.add_column(column, justify="left" if column in ("arm", "verdict") else "right")
    for d in result.depth:
        v = verdicts.get(d.arm)
        forecast = forecasts.get((d.arm, d.lr))
        table.add_row(
            d.arm,
            str(d.layers),
            _lr(d.lr),
            f"{d.unstable}/{d.runs}",
            num(d.signals.get("attn_logit_max", math.nan), 3),
            num(d.signals.get("log_z_max", math.nan), 3),
            num(d.signals.get("grad_norm", math.nan), 3),
            ""
            if forecast is None or not shown
            else num(forecast.forecast.get("grad_norm", math.inf), 3),
            "" if v is None else f"{_p(v.p_adjusted)} ({v.measure or '–'})",
            "(reference)" if v is None else v.verdict,
        )
    return table


def _shown(result: StressResult, signal: str) -> bool:
    """Whether `signal`'s forecasts are printed: its backtest beats chance (`Backtest.useful`)."""
    return any(b.useful for b in result.backtests if b.signal == signal)


def _backtest_table(result: StressResult) -> Table:
    forecast = Table(
        title="forecast backtest (fit of the signal's growth over steps; a forecast is shown "
        "only where its hit rate beats its false-alarm rate, one-sided Fisher p < 0.05)"
    )
    columns = ("signal", "threshold", "broke", "warned in time", "false alarms", "precision")
    for column in (*columns, "recall", "p vs chance", "median lead (steps)"):
        forecast.add_column(column, justify="right")
    for b in result.backtests:
        forecast.add_row(
            b.signal,
            f"{b.threshold:g}× baseline" if b.relative else f"{b.threshold:g}",
            str(b.broke),
            str(b.warned_in_time),
            f"{b.false_alarms}/{b.stable}",
            num(b.precision, 2),
            num(b.recall, 2),
            _p(b.gate_p),
            num(b.median_lead, 3) if b.useful else "not useful here",
        )
    return forecast


def _p(value: float | None) -> str:
    return "–" if value is None else pvalue(value)


def _lr(value: float | None) -> str:
    return "none" if value is None else f"{value:.3g}"
