"""The stress test's result: measures, verdicts, depth stress, forecast backtest, directions.

`analyse` reads every finished stress run (its DONE, metrics.jsonl and events.jsonl) into
`SweepRun`s and signal traces, and computes `StressResult`, which `archaudit stress` prints,
stores as `runs/<audit>/_stress/stress.json` and the report's stability section draws.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archaudit.audit.grid.plan import BASELINE
from archaudit.audit.stability.stress import StressPlan, StressPoint, read_sweep_run
from archaudit.errors import DataError
from archaudit.files import atomic_write_text, read_json
from archaudit.rundir import METRICS
from archaudit.stats.analyses.depth_sensitivity import (
    DepthSensitivity,
    judge_depth_sensitivity,
)
from archaudit.stats.analyses.forecast import Backtest, Trace, backtest, depth_forecast
from archaudit.stats.analyses.logits import LogitRun, LogitVerdict, judge_logits
from archaudit.stats.analyses.stability import (
    ArmStability,
    DepthVerdict,
    GroupVerdict,
    StabilityVerdict,
    Sweep,
    SweepRun,
    judge_depth,
    judge_group,
    judge_stability,
    measure,
)

RESULT_FILE = "stress.json"
SIGNALS = ("attn_logit_max", "log_z_max", "grad_norm")
"""The signals forecast. (Results stored before issue 43 forecast them up to fixed thresholds:
100, 20 and 20; their backtests keep them.)"""
RELATIVE_THRESHOLD = 4.0
"""The forecasts (over steps and over depth) reach their threshold at this multiple of the
baseline's own signal at the same rate, depth (and step); fixed before the relative backtest
was run."""
WINDOWS = {"attn_logit_max": 3, "log_z_max": 3, "grad_norm": 10}
"""Points each forecast fits: the last 3 validations, or the last 10 steps of the gradient
norm (logged every step, smoothed as the stability monitor does: EMA 0.9)."""
GRAD_EMA = 0.9
HORIZON_FRACTION = 0.5
"""The forecast looks ahead half of the run's steps."""


@dataclass(frozen=True)
class SignalTrace:
    """One run's logged signals over steps (the report draws those of runs that broke)."""

    arm: str
    lr: float
    seed: int
    layers: int
    break_step: int | None
    steps: tuple[int, ...]
    signals: dict[str, tuple[float, ...]]
    """At the validations (`steps`): attn_logit_max (over layers), log_z_max."""
    grad_norm: tuple[float, ...] = ()
    """Every step's gradient norm, smoothed (EMA 0.9); step i + 1 at index i."""

    def series(self, name: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
        if name == "grad_norm":
            return tuple(range(1, len(self.grad_norm) + 1)), self.grad_norm
        return self.steps, self.signals[name]


@dataclass(frozen=True)
class DepthPoint:
    arm: str
    layers: int
    lr: float
    runs: int
    unstable: int
    mean_loss: float
    """Seeds' mean of min(final loss, initial loss)."""
    signals: dict[str, float]
    """Each signal's mean over seeds of its largest logged value."""


@dataclass(frozen=True)
class DepthForecast:
    """One arm and rate of the depth stress: where each signal's fit over depth (from the
    depths before the first that broke) reaches its threshold, and where it really broke."""

    arm: str
    lr: float
    layers: tuple[int, ...]
    broke_at: int | None
    """The fewest layers at which a run broke (None: none did)."""
    forecast: dict[str, float]
    """Signal → the depth (layers) its fit reaches the threshold at (inf: it does not grow)."""
    relative: bool = False
    """The fit is of the signal over the baseline's at the same depth and rate, up to
    `RELATIVE_THRESHOLD` (False, in results stored before issue 43: of the signal itself)."""


@dataclass(frozen=True)
class StressResult:
    audit: str
    scale: str
    cost: str
    arms: tuple[ArmStability, ...]
    verdicts: tuple[StabilityVerdict, ...]
    depth: tuple[DepthPoint, ...]
    depth_forecasts: tuple[DepthForecast, ...]
    backtests: tuple[Backtest, ...]
    traces: tuple[SignalTrace, ...]
    missing: int
    """Points without a result yet (not trained, or failed)."""
    depth_verdicts: tuple[DepthVerdict, ...] = ()
    """Each depth-stress arm against the baseline (the depth-fragility test)."""
    group: GroupVerdict | None = None
    """The arms declared fragile (`stress.fragile`) against the other swept arms."""
    sweep_runs: tuple[SweepRun, ...] = ()
    """Every run of the sweep's grid as the tests read it (the power model's pilot)."""
    depth_runs: tuple[SweepRun, ...] = ()
    """Every run the depth test reads (the depth rates, the sweep's depth included)."""
    logit_verdicts: tuple[LogitVerdict, ...] = ()
    """Each arm against the baseline on Wortsman et al.'s logit measures (`stats.analyses.
    logits`): the largest attention logit and the final |log Z| at the upper rates."""
    depth_sensitivity: tuple[DepthSensitivity, ...] = ()
    """Each depth-stress arm against the baseline on how much its loss rises with depth
    (`stats.analyses.depth_sensitivity`: ΔD, its own family)."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StressResult:
        try:
            group = data.get("group")
            return cls(
                **{
                    **data,
                    **{k: tuple(_build(k, v)) for k, v in data.items() if k in _ITEMS},
                    "group": None if group is None else _build_one(GroupVerdict, group),
                }
            )
        except (TypeError, KeyError, ValueError) as err:  # ValueError: an unknown verdict
            raise DataError(f"not a stress result ({err})") from None

    def pilot(self, depth: bool = False) -> dict[str, list[SweepRun]]:
        """The runs of each arm the power model fits (`stats.analyses.stress_power`)."""
        out: dict[str, list[SweepRun]] = {}
        for run in self.depth_runs if depth else self.sweep_runs:
            out.setdefault(run.arm, []).append(run)
        return out

    def logit_pilot(self) -> dict[str, list[LogitRun]]:
        """The logit measures of every run of the grid, per arm (the logit test's pilot)."""
        traces = {(t.arm, t.lr, t.seed, t.layers): t for t in self.traces}
        out: dict[str, list[LogitRun]] = {}
        for run in self.sweep_runs:
            trace = traces.get((run.arm, run.lr, run.seed, run.layers))
            if trace is not None:
                out.setdefault(run.arm, []).append(logit_run(run, trace))
        return out

    def arm(self, name: str) -> ArmStability | None:
        return next((a for a in self.arms if a.arm == name), None)


_ITEMS: dict[str, type] = {
    "arms": ArmStability,
    "verdicts": StabilityVerdict,
    "depth": DepthPoint,
    "depth_forecasts": DepthForecast,
    "backtests": Backtest,
    "traces": SignalTrace,
    "depth_verdicts": DepthVerdict,
    "sweep_runs": SweepRun,
    "depth_runs": SweepRun,
    "logit_verdicts": LogitVerdict,
    "depth_sensitivity": DepthSensitivity,
}


def _build(key: str, items: list[dict[str, Any]]) -> list[Any]:
    return [_build_one(_ITEMS[key], item) for item in items]


def _build_one(cls: type, item: dict[str, Any]) -> Any:
    fields = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: _tuples(v) for k, v in item.items() if k in fields})


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def analyse(plan: StressPlan) -> StressResult:
    """Every finished point read back; measures and verdicts of the sweep at 1× depth."""
    read = _read_points(plan)
    sweeps = {
        arm: Sweep.of(arm, [r for p, r, _ in read if p.kind == "lr" and p.run.arm == arm])
        for arm in dict.fromkeys(p.run.arm for p, _, _ in read if p.kind == "lr")
    }
    settings = plan.spec.stress
    verdicts = (
        judge_stability(
            sweeps,
            BASELINE,
            alpha=settings.alpha,
            correction=settings.correction,
            permutations=settings.permutations,
        )
        if BASELINE in sweeps
        else []
    )
    traces = [t for _, _, t in read]
    depth = _depth_points(read)
    depth_runs = _depth_runs(read)
    depth_verdicts, depth_sensitivity = _depth_judgements(depth_runs, settings)
    return StressResult(
        audit=plan.spec.name,
        scale=plan.scale,
        cost=plan.cost_line(),
        arms=tuple(measure(s, above=_above(read, s.arm)) for s in sweeps.values()),
        verdicts=tuple(verdicts),
        depth=tuple(depth),
        depth_forecasts=tuple(_depth_forecasts(depth)),
        backtests=tuple(backtests(traces, max(p.run.recipe.steps for p in plan.points))),
        traces=tuple(traces),
        missing=len(plan.points) - len(read),
        depth_verdicts=depth_verdicts,
        group=judge_group(
            sweeps,
            settings.fragile,
            BASELINE,
            alpha=settings.alpha,
            permutations=settings.permutations,
        ),
        sweep_runs=tuple(r for s in sweeps.values() for runs in s.by_rate for r in runs),
        depth_runs=tuple(r for runs in depth_runs.values() for r in runs),
        logit_verdicts=tuple(_logit_verdicts(read, settings, BASELINE in sweeps)),
        depth_sensitivity=depth_sensitivity,
    )


def _depth_judgements(
    runs: dict[str, list[SweepRun]], settings: Any
) -> tuple[tuple[DepthVerdict, ...], tuple[DepthSensitivity, ...]]:
    """The depth stress's two tests, each its own Holm family over the depth arms: the depth
    test (`judge_depth`) and the depth-sensitivity test (`judge_depth_sensitivity`)."""
    if BASELINE not in runs:
        return (), ()
    options = {
        "alpha": settings.alpha,
        "correction": settings.correction,
        "permutations": settings.permutations,
    }
    return (
        tuple(judge_depth(runs, BASELINE, **options)),
        tuple(judge_depth_sensitivity(runs, BASELINE, **options)),
    )


def _read_points(plan: StressPlan) -> list[tuple[StressPoint, SweepRun, SignalTrace]]:
    """Each finished point with its run and its signal trace, in the plan's order."""
    read: list[tuple[StressPoint, SweepRun, SignalTrace]] = []
    for point in plan.points:
        run_dir = plan.run_dir(point)
        sweep_run = read_sweep_run(run_dir, point.run, plan.spec.recipe.lr)
        if sweep_run is not None:
            read.append((point, sweep_run, _trace(run_dir, sweep_run)))
    return read


def _logit_verdicts(
    read: Sequence[tuple[StressPoint, SweepRun, SignalTrace]], settings: Any, judged: bool
) -> list[LogitVerdict]:
    """The logit test of every swept arm (the sweep's grid, at its depth)."""
    runs: dict[str, list[LogitRun]] = {}
    for point, run, trace in read:
        if point.kind == "lr":
            runs.setdefault(run.arm, []).append(logit_run(run, trace))
    if not judged:
        return []
    return judge_logits(
        runs,
        BASELINE,
        alpha=settings.alpha,
        correction=settings.correction,
        permutations=settings.permutations,
    )


def logit_run(run: SweepRun, trace: SignalTrace) -> LogitRun:
    """A run's logit measures: its largest attention logit, its last finite |log Z|."""
    log_z = [abs(v) for v in trace.signals["log_z_max"] if math.isfinite(v)]
    return LogitRun(
        run.arm,
        run.lr,
        run.seed,
        run.stable,
        _largest(trace.signals["attn_logit_max"]),
        log_z[-1] if log_z else math.nan,
    )


def _above(read: Sequence[tuple[StressPoint, SweepRun, SignalTrace]], arm: str) -> list[SweepRun]:
    """The arm's runs at the rates above the grid (they count for its largest stable rate)."""
    return [r for p, r, _ in read if p.kind == "above" and p.run.arm == arm]


def _at_depth_rates(
    read: Sequence[tuple[StressPoint, SweepRun, SignalTrace]],
) -> list[tuple[SweepRun, SignalTrace]]:
    """The runs of each depth-stress arm at its depth rates, the sweep's depth included."""
    rates = {(p.run.arm, r.lr) for p, r, _ in read if p.kind == "depth"}
    return [(run, trace) for _, run, trace in read if (run.arm, run.lr) in rates]


def _depth_runs(
    read: Sequence[tuple[StressPoint, SweepRun, SignalTrace]],
) -> dict[str, list[SweepRun]]:
    out: dict[str, list[SweepRun]] = {}
    for run, _ in _at_depth_rates(read):
        out.setdefault(run.arm, []).append(run)
    return out


def _trace(run_dir: Path, run: SweepRun) -> SignalTrace:
    """The signals of every logged validation (per run: the largest over layers), and the
    smoothed gradient norm of every step."""
    steps: list[int] = []
    series: dict[str, list[float]] = {"attn_logit_max": [], "log_z_max": []}
    grad: list[float] = []
    for line in (run_dir / METRICS).read_text().splitlines():
        row = json.loads(line) if line.strip() else {}
        g = _number(row.get("grad_norm"))
        grad.append(g if not grad else GRAD_EMA * grad[-1] + (1 - GRAD_EMA) * g)
        signals = row.get("signals")
        if not signals:
            continue
        steps.append(int(row["step"]))
        series["attn_logit_max"].append(_largest(signals.get("attn_logit_max") or []))
        series["log_z_max"].append(_number(signals.get("log_z_max")))
    return SignalTrace(
        run.arm,
        run.lr,
        run.seed,
        run.layers,
        run.break_step,
        tuple(steps),
        {k: tuple(v) for k, v in series.items()},
        tuple(round(g, 4) for g in grad),
    )


def _largest(values: Sequence[float | None]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return max(finite, default=math.nan)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def _depth_points(read: Sequence[tuple[StressPoint, SweepRun, SignalTrace]]) -> list[DepthPoint]:
    """Per arm, rate and depth of the depth stress, with the 1× runs at the same rate."""
    groups: dict[tuple[str, int, float], list[tuple[SweepRun, SignalTrace]]] = {}
    for run, trace in _at_depth_rates(read):
        groups.setdefault((run.arm, run.layers, run.lr), []).append((run, trace))
    out = []
    for (arm, layers, lr), group in sorted(groups.items()):
        peaks = {name: _mean([_largest(t.series(name)[1]) for _, t in group]) for name in SIGNALS}
        out.append(
            DepthPoint(
                arm,
                layers,
                lr,
                len(group),
                sum(not r.stable for r, _ in group),
                _mean([r.clamped for r, _ in group]),
                peaks,
            )
        )
    return out


def _depth_forecasts(points: Sequence[DepthPoint]) -> list[DepthForecast]:
    """Per arm (the baseline is the reference) and depth rate: each signal's peak over the
    baseline's at the same depth and rate, fitted over depth up to `RELATIVE_THRESHOLD`."""
    base = {(p.layers, p.lr): p for p in points if p.arm == BASELINE}
    out = []
    for arm, lr in dict.fromkeys((p.arm, p.lr) for p in points if p.arm != BASELINE):
        group = sorted((p for p in points if (p.arm, p.lr) == (arm, lr)), key=lambda p: p.layers)
        broke = next((p.layers for p in group if p.unstable), None)
        fit = [p for p in group if (broke is None or p.layers < broke) and (p.layers, lr) in base]
        forecast = {
            name: depth_forecast(
                [p.layers for p in fit],
                [_ratio(p.signals[name], base[(p.layers, lr)].signals[name]) for p in fit],
                RELATIVE_THRESHOLD,
            )
            for name in SIGNALS
        }
        layers = tuple(p.layers for p in group)
        out.append(DepthForecast(arm, lr, layers, broke, forecast, relative=True))
    return out


def _ratio(value: float, reference: float) -> float:
    """|value| / |reference|; NaN unless the reference is a finite non-zero number."""
    ok = math.isfinite(reference) and reference != 0
    return abs(value) / abs(reference) if ok else math.nan


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def backtests(traces: Sequence[SignalTrace], steps: int) -> list[Backtest]:
    """Each signal's forecast over steps relative to the baseline (`forecast` module), replayed
    on every run of an arm with baseline runs at its rate and depth; a horizon of half the
    run's `steps`."""
    horizon = max(1, int(steps * HORIZON_FRACTION))
    reference = _baseline_means(traces)
    out = []
    for name in SIGNALS:
        runs = [
            _relative_trace(t, name, reference[(t.lr, t.layers, name)])
            for t in traces
            if t.arm != BASELINE and (t.lr, t.layers, name) in reference
        ]
        out.append(backtest(name, runs, RELATIVE_THRESHOLD, horizon, WINDOWS[name], True))
    return out


def _baseline_means(
    traces: Sequence[SignalTrace],
) -> dict[tuple[float, int, str], dict[int, float]]:
    """Per rate, depth and signal: the baseline seeds' mean |signal| at each logged step."""
    sums: dict[tuple[float, int, str], dict[int, list[float]]] = {}
    for t in (t for t in traces if t.arm == BASELINE):
        for name in SIGNALS:
            by_step = sums.setdefault((t.lr, t.layers, name), {})
            for step, value in zip(*t.series(name), strict=True):
                if math.isfinite(value):
                    by_step.setdefault(step, []).append(abs(value))
    return {key: {s: _mean(v) for s, v in steps.items()} for key, steps in sums.items()}


def _relative_trace(trace: SignalTrace, name: str, reference: dict[int, float]) -> Trace:
    """The run's |signal| over the baseline's at each step both logged (a non-finite value of
    the run, e.g. after it diverged, stays non-finite)."""
    steps, values = trace.series(name)
    kept = [
        (s, abs(v) / reference[s]) for s, v in zip(steps, values, strict=True) if reference.get(s)
    ]
    run = f"{trace.arm}/{trace.lr:g}/{trace.seed}/L{trace.layers}"
    return Trace(run, tuple(s for s, _ in kept), tuple(r for _, r in kept), trace.break_step)


def write_result(result: StressResult, path: Path) -> None:
    atomic_write_text(path, json.dumps(result.to_json(), indent=1, sort_keys=True) + "\n")


def read_result(path: Path) -> StressResult:
    """The stored result, or one line naming `path` when it is unreadable, not a regular file,
    nested too deeply (`files.read_json`), or not a stress result's shape."""
    try:
        data = read_json(path)
    except (OSError, DataError) as err:
        why = str(err).removeprefix(f"{path} ")
        raise DataError(f"{path}: cannot read the stress result ({why})") from None
    if data is None:
        raise DataError(f"{path}: cannot read the stress result (no such file)")
    if not isinstance(data, dict):
        raise DataError(f"{path}: not a stress result (a JSON {type(data).__name__})")
    try:
        return StressResult.from_json(data)
    except DataError as err:
        raise DataError(f"{path}: {err}") from None
