"""What the report shows beside the findings: the runs' training curves, MoE routing, the
audit's scope and provenance. Every verdict and analysis comes from one `Findings` record
(`archaudit.audit.results.findings`), which this module asks for and never recomputes; the sections
render it. A value stats leaves undefined (NaN) is "not computed" on the page.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.audit.grid import store
from archaudit.audit.grid.record import RoutingAtEnd, RunRecord
from archaudit.audit.results.findings import Findings, report_findings
from archaudit.audit.results.power_cases import PowerCase
from archaudit.audit.stability.stress_result import StressResult
from archaudit.errors import DataError
from archaudit.metrics import PRIMARY_LOSS
from archaudit.names import BASELINE
from archaudit.report.palette import Colour, arm_colours
from archaudit.rundir import ENV, EVENTS
from archaudit.stats.records.table import Table

if TYPE_CHECKING:
    from archaudit.stats.analyses.snr import SignalToNoise
    from archaudit.stats.judging.judgement import Judgement
    from archaudit.stats.predictions.predict import Prediction


@dataclass(frozen=True)
class Curve:
    """One run's training curve (metrics.jsonl) and where it diverged (DONE)."""

    arm: str
    family: str | None
    scale: str
    seed: int
    steps: tuple[int, ...]
    loss: tuple[float, ...]
    grad_norm: tuple[float, ...]
    diverged_step: int | None
    val_steps: tuple[int, ...] = ()
    val_loss: tuple[float, ...] = ()
    """The validation loss the trainer recorded every `eval_every` steps."""
    finished: bool = True
    """The run has its DONE record; a run still training draws its gradient norm only."""


@dataclass(frozen=True)
class Band:
    """One arm's curve at one scale over its seeds: the mean per step and the seeds' range."""

    arm: str
    scale: str
    seeds: int
    steps: tuple[int, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


TRAIN_ZOOM = 2 / 3
"""The training-loss panel starts here (share of the run): the early drop from ~5.5 would
squeeze the differences at the end into a hair-thin band."""


def bands(curves: Sequence[Curve], scale: str, kind: str) -> tuple[Band, ...]:
    """Per arm at `scale`, the finished seeds that did not diverge, on the steps they all
    recorded: `kind` "val" is the recorded validation loss, "train" the last third of the
    training loss. A seed still training is left out: its steps so far would cut every seed's
    band short (or, for the last third of a longer run, leave no common step at all)."""
    runs: dict[str, list[dict[int, float]]] = {}
    for c in curves:
        if c.scale != scale or c.diverged_step is not None or not c.finished:
            continue
        if kind == "val":
            points = dict(zip(c.val_steps, c.val_loss, strict=True))
        else:
            first = TRAIN_ZOOM * max(c.steps, default=0)
            points = {t: v for t, v in zip(c.steps, c.loss, strict=True) if t >= first}
        if points:
            runs.setdefault(c.arm, []).append(points)
    out = []
    for arm, seeds in runs.items():
        steps = sorted(set.intersection(*(set(p) for p in seeds)))
        if steps:
            values = [[p[t] for p in seeds] for t in steps]
            out.append(
                Band(
                    arm=arm,
                    scale=scale,
                    seeds=len(seeds),
                    steps=tuple(steps),
                    mean=tuple(sum(v) / len(v) for v in values),
                    low=tuple(min(v) for v in values),
                    high=tuple(max(v) for v in values),
                )
            )
    return tuple(out)


@dataclass(frozen=True)
class Routing:
    """One MoE run's routing at its last logged step (metrics.jsonl) and its collapse events."""

    arm: str
    scale: str
    seed: int
    step: int
    load: tuple[tuple[float, ...], ...]
    """Per MoE layer: each expert's share of the chosen assignments (sums to 1)."""
    dropped: float
    entropy: float
    collapses: tuple[tuple[int, int], ...]
    """(step, layer) of every router_collapse event in events.jsonl."""


@dataclass(frozen=True)
class ScaleScope:
    name: str
    model: dict[str, Any]
    tokens: int | None
    arms: int
    seeds: tuple[int, ...]
    """Distinct seed counts per arm at this scale."""


@dataclass(frozen=True)
class Scope:
    scales: tuple[ScaleScope, ...]
    recipe: dict[str, Any]
    """The shared recipe (empty for a CSV)."""
    suite: str | None
    tuned_arms: tuple[str, ...]
    params: tuple[tuple[str, str, int, int], ...] = ()
    """(arm, scale, total, active) parameters, the mean over seeds of each run's count."""


@dataclass(frozen=True)
class Provenance:
    source: str
    source_sha256: str | None
    """sha256 of the results file (an audit's: of the DONE records' results.csv text)."""
    recipe_hashes: tuple[str, ...]
    environments: tuple[dict[str, Any], ...]
    """Distinct env.json records of the runs (versions, device, source hash)."""
    command: str | None


@dataclass(frozen=True)
class Progress:
    """How far a running audit is (a partial report)."""

    finished: int
    total: int
    states: dict[str, int]


@dataclass(frozen=True)
class ReportData:
    source: str
    kind: str
    """"audit" or "csv"."""
    title: str
    findings: Findings
    """Every verdict and analysis the page shows (`audit.results.findings`), with what is absent."""
    curves: tuple[Curve, ...]
    scope: Scope
    provenance: Provenance
    progress: Progress | None
    protocol_notes: dict[str, tuple[tuple[str | None, str], ...]]
    """Arm → (the scale it concerns or None for every scale, the warning): the audit's
    protocol warnings (R5–R7) and the seeds the sequential loop added, stored at plan time."""
    routing: tuple[Routing, ...] = ()
    """Runs with mixture-of-experts layers: their final expert load, drops and collapses."""
    colours: dict[str, Colour] = field(default_factory=dict)
    """Arm → its one colour on every figure of the page (report.palette)."""

    @property
    def metrics(self) -> tuple[str, ...]:
        return self.findings.metrics

    @property
    def verdicts(self) -> tuple[Judgement, ...]:
        """Every family's one verdict record: the numbers `archaudit stats` prints."""
        return self.findings.judgements

    @property
    def power(self) -> tuple[PowerCase, ...]:
        return self.findings.power

    @property
    def signal(self) -> SignalToNoise | None:
        return self.findings.snr

    @property
    def prediction(self) -> Prediction | None:
        return self.findings.prediction

    @property
    def stress(self) -> StressResult | None:
        return self.findings.stability


def gather(
    source: str | Path,
    *,
    metrics: Sequence[str] = (),
    baseline: str = BASELINE,
    command: str | None = None,
    found: Findings | None = None,
) -> ReportData:
    """Read SOURCE (an audit directory, an audit file or a results CSV): its findings, every
    analysis asked (those that do not apply are recorded as absent with the reason), and its
    runs' curves, scope and provenance. `found`: SOURCE's `report_findings`, when the caller
    already holds them (`run` and `demo` print their verdict tables from the same record)."""
    if found is None:
        found = report_findings(source, metrics, baseline)
    audit_dir, table = found.audit_dir, found.table
    runs = _runs(audit_dir) if audit_dir else ()
    curves = tuple(curve for run in runs if (curve := _curve(run)) is not None)
    stress = found.stability
    arms = (*(table.arms if table else ()), *(c.arm for c in curves))
    arms += tuple(a.arm for a in stress.arms) if stress else ()
    csv_path = found.results_path or Path(found.source)
    return ReportData(
        source=str(source),
        kind="audit" if audit_dir else "csv",
        title=_title(audit_dir, csv_path),
        findings=found,
        curves=curves,
        scope=_scope(table, runs, audit_dir),
        provenance=_provenance(csv_path, table, runs, command),
        progress=_progress(runs) if audit_dir else None,
        protocol_notes=_protocol_notes(audit_dir),
        routing=tuple(r for run in runs if (r := _routing(run)) is not None),
        colours=arm_colours(arms, baseline),
    )


# ---------------------------------------------------------------------------------------------
# audit directories: runs, curves, scope, provenance


@dataclass(frozen=True)
class _Run:
    path: Path
    spec: dict[str, Any]
    done: RunRecord | None
    env: dict[str, Any] | None


def _runs(audit_dir: Path) -> tuple[_Run, ...]:
    return tuple(
        _Run(
            path=run_dir,
            spec=store.read_json(run_dir / store.RUN_FILE) or {},
            done=_record(run_dir),
            env=store.read_json(run_dir / ENV),
        )
        for run_dir in store.audit_run_dirs(audit_dir)
    )


def _record(run_dir: Path) -> RunRecord | None:
    """The run's DONE record; a garbled one, or another run's, reads as unfinished (`status`
    says why)."""
    try:
        return store.read_finished(run_dir, store.read_spec(run_dir))
    except DataError:
        return None


def _curve(run: _Run) -> Curve | None:
    rows = _read_metrics(run.path / store.METRICS)
    if not rows:
        return None
    spec = run.spec
    return Curve(
        arm=spec.get("arm", run.path.parts[-3]),
        family=spec.get("family"),
        scale=spec.get("scale", run.path.parts[-2]),
        seed=int(spec.get("seed", 0)),
        steps=tuple(int(r["step"]) for r in rows),
        loss=tuple(_number(r.get("loss")) for r in rows),
        grad_norm=tuple(_number(r.get("grad_norm")) for r in rows),
        diverged_step=run.done.diverged_step if run.done else None,
        finished=run.done is not None,
        val_steps=tuple(int(r["step"]) for r in rows if r.get(PRIMARY_LOSS) is not None),
        val_loss=tuple(float(r[PRIMARY_LOSS]) for r in rows if r.get(PRIMARY_LOSS) is not None),
    )


def _routing(run: _Run) -> Routing | None:
    at_end = RoutingAtEnd.of_rows(_read_metrics(run.path / store.METRICS))
    if at_end is None:
        return None
    spec = run.spec
    events = _read_metrics(run.path / EVENTS)
    return Routing(
        arm=spec.get("arm", run.path.parts[-3]),
        scale=spec.get("scale", run.path.parts[-2]),
        seed=int(spec.get("seed", 0)),
        step=at_end.step,
        load=at_end.load,
        dropped=at_end.dropped,
        entropy=at_end.entropy,
        collapses=tuple(
            (int(e["step"]), int(e["layer"])) for e in events if e.get("event") == "router_collapse"
        ),
    )


def _read_metrics(path: Path) -> list[dict[str, Any]]:
    """The complete rows of metrics.jsonl; a running trainer's torn last line is left out."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _scope(table: Table | None, runs: Sequence[_Run], audit_dir: Path | None) -> Scope:
    audit = (store.read_json(audit_dir / store.AUDIT_FILE) or {}) if audit_dir else {}
    specs = [run.spec for run in runs if run.spec]
    scales = table.scales if table else tuple(dict.fromkeys(s["scale"] for s in specs))
    out = []
    for scale in scales:
        spec = next((s for s in specs if s.get("scale") == scale), None)
        recipe = spec.get("recipe", {}) if spec else {}
        model = spec.get("model", {}) if spec else {}
        tokens = (
            recipe["steps"] * recipe["batch_tokens"]
            if "steps" in recipe and "batch_tokens" in recipe
            else None
        )
        planned = Counter(s["arm"] for s in specs if s.get("scale") == scale)
        arms = table.arms_at(scale) if table else tuple(planned)
        seeds = sorted({len(table.runs(arm, scale)) if table else planned[arm] for arm in arms})
        out.append(ScaleScope(scale, model, tokens, len(arms), tuple(seeds)))
    shared: dict[str, Any] = next((s.get("recipe", {}) for s in specs if not s.get("tuned")), {})
    tuned = tuple(sorted({s["arm"] for s in specs if s.get("tuned")})) or (
        tuple(a for a in table.arms if table.tuned(a)) if table else ()
    )
    return Scope(tuple(out), shared, audit.get("suite"), tuned, _param_counts(table))


def _param_counts(table: Table | None) -> tuple[tuple[str, str, int, int], ...]:
    """Total and active parameters per arm and scale (active = total for runs from before
    active counts were recorded)."""
    values: dict[tuple[str, str], dict[str, list[float]]] = {}
    for row in table.rows if table else ():
        if row.metric in ("params", "active_params") and math.isfinite(row.value):
            values.setdefault((row.arm, row.scale), {}).setdefault(row.metric, []).append(row.value)
    out = []
    for (arm, scale), counts in values.items():
        total = counts.get("params")
        if total:
            active = counts.get("active_params", total)
            out.append(
                (arm, scale, round(sum(total) / len(total)), round(sum(active) / len(active)))
            )
    return tuple(out)


def _provenance(
    csv_path: Path, table: Table | None, runs: Sequence[_Run], command: str | None
) -> Provenance:
    digest = _digest(csv_path, table)
    hashes = tuple(sorted({r.spec["recipe_hash"] for r in runs if "recipe_hash" in r.spec}))
    envs: list[dict[str, Any]] = []
    for run in runs:
        # torch_threads and cpu_count vary with the worker, not with the result
        env = {k: v for k, v in (run.env or {}).items() if k not in ("torch_threads",)}
        if env and env not in envs:
            envs.append(env)
    return Provenance(str(csv_path), digest, hashes, tuple(envs), command)


def _digest(csv_path: Path, table: Table | None) -> str | None:
    """sha256 of the results file: the CSV the table was read from, or for an audit read from
    its DONE records the text its results.csv export holds."""
    if table is not None and table.source != str(csv_path):
        return hashlib.sha256(table.to_csv().encode()).hexdigest()
    return hashlib.sha256(csv_path.read_bytes()).hexdigest() if csv_path.is_file() else None


def _progress(runs: Sequence[_Run]) -> Progress:
    states = Counter("unfinished" if run.done is None else run.done.status for run in runs)
    finished = len(runs) - states["unfinished"]
    return Progress(finished, len(runs), dict(sorted(states.items())))


def _protocol_notes(audit_dir: Path | None) -> dict[str, tuple[tuple[str | None, str], ...]]:
    audit = (store.read_json(audit_dir / store.AUDIT_FILE) or {}) if audit_dir else {}
    notes: dict[str, list[tuple[str | None, str]]] = {}
    for note in audit.get("notes", []):
        text = f"{note['rule']}: {note['message']}"
        notes.setdefault(note["arm"], []).append((note.get("scale"), text))
    return {arm: tuple(items) for arm, items in notes.items()}


def _title(audit_dir: Path | None, csv_path: Path) -> str:
    if audit_dir is None:
        return csv_path.name
    audit = store.read_json(audit_dir / store.AUDIT_FILE) or {}
    return str(audit.get("name", audit_dir.name))
