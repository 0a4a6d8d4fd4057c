"""`run_until_settled`: the sequential audit loop (`archaudit run --until-settled`,
`[seeds] policy = "sequential"`; docs/sequential.md).

Round by round: bring every planned run to DONE (`run_audit`, so any executor works), judge every
primary metric with the group-sequential rule of `archaudit.stats.simulation.sequential`, then add
one seed
to each arm whose verdict could still change (ranked by value per run when the budget is short)
and one to the baseline of their scale, until every verdict is settled or the budget is spent.

State lives on disk only: the run directories and an append-only record, one file per round,
`runs/<audit>/sequential/round-<k>.json` (published once with an atomic link). Every decision is
replayed from them, so a coordinator killed mid-round resumes where it was, and two coordinators
on one audit publish the same round once (the first writer wins; the other follows its record).
Added seeds are numbered on from the existing ones, and claims already stop a run from being
executed twice.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from archaudit.audit.execute.coordinator import SEED_NOTE, AuditOutcome, run_audit
from archaudit.audit.grid import store
from archaudit.audit.grid.plan import Plan, RunSpec
from archaudit.audit.grid.record import RunRecord
from archaudit.audit.launcher.warm import kept_server
from archaudit.audit.setup.protocol import ProtocolNote
from archaudit.audit.setup.settle import SettleOptions
from archaudit.errors import ConfigError, DataError
from archaudit.files import atomic_write_text
from archaudit.metrics import lower_is_better
from archaudit.names import BASELINE, ResultStatus
from archaudit.progress import log
from archaudit.stats.choices.options import primary_alpha
from archaudit.stats.judging.loop import ARM_STOPS, ArmStop, LoopArm, LoopFamily, LoopStop
from archaudit.stats.judging.signal import AVERAGE, check_signal
from archaudit.stats.records.table import Row, Table
from archaudit.stats.records.verdicts import DIVERGED, Verdict, classify
from archaudit.stats.simulation.sequential import (
    ArmTests,
    LoopState,
    SequentialRule,
    arm_tests,
    final_thresholds,
    look,
    next_seed_value,
    sequential_design_rate,
)

RECORD_DIR, SUMMARY = store.SEQUENTIAL_DIR, store.SEQUENTIAL_SUMMARY
VALUELESS = 0.005
"""An arm's last seed is not run when its probability to settle the arm is below this (it
prints as 0.00): it would spend a run on nothing. Earlier seeds are left to the futility rule,
which looks ahead to the last seed."""


@dataclass(frozen=True)
class AddedSeed:
    """One run a round added: the arm at a scale, its seed number and why it was worth a run."""

    arm: str
    scale: str
    seed: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AddedSeed:
        return cls(str(data["arm"]), str(data["scale"]), int(data["seed"]), str(data["reason"]))


@dataclass(frozen=True)
class Round:
    index: int
    counts: dict[str, int]
    """"arm/scale" → seeds after this round's additions (every group of the audit)."""
    added: tuple[AddedSeed, ...]

    def to_json(self) -> dict[str, Any]:
        added = [seed.to_json() for seed in self.added]
        return {"round": self.index, "counts": self.counts, "added": added}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Round:
        added = tuple(AddedSeed.from_json(seed) for seed in data["added"])
        return cls(int(data["round"]), dict(data["counts"]), added)


@dataclass(frozen=True)
class SettledAudit:
    audit: AuditOutcome
    rounds: int
    runs: int
    stop: LoopStop
    families: tuple[LoopFamily, ...]
    rule: SequentialRule
    """The stopping rule the verdicts were reached under (its design error rate: stats)."""


def key(arm: str, scale: str) -> str:
    return f"{arm}/{scale}"


# ---------------------------------------------------------------------------------------------
# the record


def record_dir(audit_dir: Path) -> Path:
    return audit_dir / RECORD_DIR


def read_rounds(audit_dir: Path) -> list[Round]:
    """Every published round, in order (round-1, round-2, ...: the record is append-only)."""
    rounds: list[Round] = []
    while True:
        data = store.read_json(record_dir(audit_dir) / f"round-{len(rounds) + 1}.json")
        if data is None:
            return rounds
        rounds.append(Round.from_json(data))


def publish_round(audit_dir: Path, round_: Round) -> Round:
    """Write the round once (an atomic link refuses an existing file); return what is there."""
    folder = record_dir(audit_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"round-{round_.index}.json"
    tmp = folder / f".round-{round_.index}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(round_.to_json(), indent=1, sort_keys=True) + "\n")
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another coordinator published this round first: follow it
    finally:
        tmp.unlink(missing_ok=True)
    return read_rounds(audit_dir)[round_.index - 1]


# ---------------------------------------------------------------------------------------------
# the plan, grown by the record


def initial_counts(plan: Plan) -> dict[str, int]:
    counts: dict[str, int] = {}
    for run in plan.runs:
        name = key(run.arm, run.scale)
        counts[name] = max(counts.get(name, 0), run.seed + 1)
    return counts


def extend_plan(plan: Plan, rounds: Sequence[Round]) -> Plan:
    """The plan with every seed the record added, and one note per added seed."""
    first = {key(r.arm, r.scale): r for r in plan.runs if r.seed == 0}
    runs, notes = list(plan.runs), list(plan.notes)
    for round_ in rounds:
        for added in round_.added:
            template = first.get(key(added.arm, added.scale))
            if template is None:  # an arm (or scale) taken out of the audit: its runs stay
                continue  # on disk, out of the plan and the verdicts
            runs.append(_seed_run(template, added.seed))
            message = (
                f"{added.arm} at {added.scale}: seed {added.seed} added in round "
                f"{round_.index}: {added.reason}"
            )
            notes.append(ProtocolNote(SEED_NOTE, added.arm, message, added.scale))
    return dataclasses.replace(plan, runs=tuple(runs), notes=tuple(notes))


def _seed_run(template: RunSpec, seed: int) -> RunSpec:
    path = PurePosixPath(template.path).parent / f"seed-{seed}"
    return dataclasses.replace(template, seed=seed, path=str(path))


# ---------------------------------------------------------------------------------------------
# judging every round again from the run directories


@dataclass(frozen=True)
class Family:
    baseline: str
    """The baseline's arm name in results."""
    scale: str
    metric: str
    arms: tuple[str, ...]

    @property
    def sign(self) -> float:
        """+1 when higher is better, −1 when lower is better (the metric registry's)."""
        return -1.0 if lower_is_better(self.metric) else 1.0


@dataclass(frozen=True)
class FamilyState:
    family: Family
    state: np.ndarray
    """(m,) OPEN / IMPROVER / REGRESSOR / FUTILE after the last look."""
    diverged: np.ndarray
    tests: ArmTests
    """The last look's tests (batch of one)."""
    value: np.ndarray
    """(m,) value per run of one more seed."""


def families(plan: Plan, metrics: Sequence[str]) -> list[Family]:
    """One family per (baseline, scale, metric): the arms trained against that baseline."""
    groups: dict[tuple[str, str], list[RunSpec]] = {}
    for run in plan.runs:
        if run.seed == 0:
            groups.setdefault((run.baseline, run.scale), []).append(run)
    found = []
    for (_, scale), runs in groups.items():
        baseline = next(r.arm for r in runs if r.mods == BASELINE)
        arms = tuple(r.arm for r in runs if r.mods != BASELINE)
        if arms:
            found += [Family(baseline, scale, metric, arms) for metric in metrics]
    return found


def primary_metrics(plan: Plan, options: SettleOptions) -> tuple[str, ...]:
    return tuple(options.metrics) or plan.spec.primary_metrics


Results = dict[tuple[str, str], dict[int, RunRecord]]
"""The finished runs of a sequential audit: (arm, scale) → seed → DONE record, with the metrics
the audit judges (`as_judged`)."""


def collect(plan: Plan) -> Results:
    """(arm, scale) → seed → the DONE record of every finished run of the plan, as judged."""
    results: Results = {}
    for run in plan.runs:
        record = store.read_finished(plan.run_dir(run), run)
        if record is not None:
            results.setdefault((run.arm, run.scale), {})[run.seed] = record
    return as_judged(results)


def as_judged(results: Results) -> Results:
    """The records with `downstream_avg` as the audit judges it: over the tasks that carry
    signal in the audit (`archaudit.stats.judging.signal`, docs/metrics.md), not over those each
    run
    kept alone; so the loop judges the very values `stats` and the report do."""
    records = [record for runs in results.values() for record in runs.values()]
    rows = tuple(
        Row(record.arm, record.scale, record.seed, name, math.nan if v is None else v,
            record.status)
        for record in records
        for name, v in record.metrics.items()
    )  # fmt: skip
    if not rows:
        return results
    judged = check_signal(Table(rows, "the sequential loop's runs")).table
    average = {(r.arm, r.scale, r.seed): r.value for r in judged.rows if r.metric == AVERAGE}
    return {
        group: {
            seed: dataclasses.replace(
                record,
                metrics={**record.metrics, AVERAGE: average.get((*group, seed))},
            )
            if AVERAGE in record.metrics
            else record
            for seed, record in runs.items()
        }
        for group, runs in results.items()
    }


def replay(
    family: Family,
    history: Sequence[dict[str, int]],
    results: Results,
    rule: SequentialRule,
) -> FamilyState:
    """Every look of the family again, in order: look k sees the seeds of history[k]."""
    m = len(family.arms)
    state = np.zeros((1, m), dtype=np.int8)
    before = np.zeros(m, dtype=int)
    base_key = key(family.baseline, family.scale)
    base_group = (family.baseline, family.scale)
    for counts in history:
        n = np.array([counts[key(arm, family.scale)] for arm in family.arms])
        baseline, broken = _values(results, base_group, counts[base_key], family.metric)
        if broken or len(baseline) < 2:
            raise DataError(
                f"baseline {family.baseline!r} at {family.scale!r} has a diverged run or no "
                f"{family.metric!r}: a sequential family needs >= 2 finished baseline seeds"
            )
        width = max(int(n.max()), 1)
        values = np.full((1, m, width), np.nan)
        diverged = np.zeros(m, dtype=bool)
        for i, arm in enumerate(family.arms):
            seeds, diverged[i] = _values(results, (arm, family.scale), n[i], family.metric)
            if not diverged[i]:
                values[0, i, : len(seeds)] = seeds
        tests = arm_tests(baseline[None, :], values, family.sign)
        tested = ((n > before) & ~diverged)[None, :]
        state = look(rule, tests, state, tested)
        state[0, diverged] = LoopState.FUTILE
        before = n
    value = next_seed_value(rule, tests, state)[0]
    return FamilyState(family, state[0], diverged, tests, np.where(diverged, 0.0, value))


def _values(
    results: Results, group: tuple[str, str], n: int, metric: str
) -> tuple[np.ndarray, bool]:
    """The metric of seeds 0..n−1, and whether any of them diverged or lacks it."""
    runs = results.get(group, {})
    values: list[float] = []
    for seed in range(n):
        record = runs.get(seed)
        value = None if record is None else record.metric(metric)
        if (
            record is None
            or record.status != ResultStatus.OK
            or value is None
            or not math.isfinite(value)
        ):
            return np.array(values), True
        values.append(float(value))
    return np.array(values), False


def pilot_effects(plan: Plan, metric: str) -> dict[tuple[str, str], float]:
    """(arm, scale) → observed Δ/σ (positive = better) from the finished runs already in the
    audit directory (a pilot); empty when a family has too few of them."""
    if not plan.audit_dir.is_dir():
        return {}
    results = collect(extend_plan(plan, read_rounds(plan.audit_dir)))
    found = {}
    for family in families(plan, (metric,)):
        base, _ = _values(results, (family.baseline, family.scale), 10**6, metric)
        rows = [_values(results, (arm, family.scale), 10**6, metric)[0] for arm in family.arms]
        if len(base) < 2 or not all(len(row) for row in rows):
            continue
        values = np.full((1, len(rows), max(len(row) for row in rows)), np.nan)
        for i, row in enumerate(rows):
            values[0, i, : len(row)] = row
        tests = arm_tests(base[None, :], values, family.sign)
        for i, arm in enumerate(family.arms):
            found[(arm, family.scale)] = float(tests.delta[0, i] / tests.sigma[0])
    return found


# ---------------------------------------------------------------------------------------------
# the loop


def settle_options(
    plan: Plan,
    *,
    max_seeds: int | None = None,
    budget_runs: int | None = None,
    budget_hours: float | None = None,
) -> SettleOptions:
    """The options of the audit file's [seeds] table, with the command line's overrides."""
    top = plan.spec.seeds.max if max_seeds is None else max_seeds  # 0 is refused, not 5
    if top < 1 or (budget_runs is not None and budget_runs < 1):
        raise ConfigError(f"--max-seeds ({top}) and --budget-runs must be >= 1")
    return SettleOptions(max_seeds=top, budget_runs=budget_runs, budget_hours=budget_hours)


def sequential_rule(plan: Plan, options: SettleOptions, primaries: int) -> SequentialRule:
    """The stopping rule of every family of the audit: α is split evenly (Bonferroni) across
    the `primaries` primary metrics, so the audit as a whole, not each metric, errs at most α
    (measured: docs/sequential.md); each family's boundaries spend the loop's calibrated level
    (`loop_level`), which holds that share over the noise panel for its number of arms."""
    return SequentialRule(
        alpha=primary_alpha(options.alpha, primaries),
        max_seeds=options.max_seeds,
        baseline_seeds=plan.spec.seeds.noise_floor,
        calibrated=True,
    )


def run_until_settled(
    plan: Plan,
    options: SettleOptions | None = None,
    *,
    executor: str | None = None,
    workers: int | None = None,
    tracker: str | None = None,
    live: bool = True,
) -> SettledAudit:
    """Run the audit round by round until every primary verdict is settled or the budget is
    spent; resumable and safe to run twice at once."""
    options = options or settle_options(plan)
    metrics = primary_metrics(plan, options)
    rule = sequential_rule(plan, options, len(metrics))
    with kept_server():  # one warm server for every round
        return _rounds(plan, options, rule, metrics, executor, workers, tracker, live)


def _rounds(
    plan: Plan,
    options: SettleOptions,
    rule: SequentialRule,
    metrics: Sequence[str],
    executor: str | None,
    workers: int | None,
    tracker: str | None,
    live: bool,
) -> SettledAudit:
    """The loop of `run_until_settled`: a round, its judgement, the next round's seeds."""
    start = time.monotonic()
    first = initial_counts(plan)
    warn = True  # the protocol notes are printed once, before the first round
    while True:
        rounds = read_rounds(plan.audit_dir)
        current = extend_plan(plan, rounds)
        baselines = {run.baseline for run in plan.runs}
        log(round_line(rounds, first, rule.max_seeds, len(plan.runs), len(current.runs), baselines))
        outcome = run_audit(
            current,
            executor=executor,
            workers=workers,
            tracker=tracker,
            live=live,
            warn=warn,
            export=False,  # once, when the loop ends (`_finish`)
        )
        warn = False
        # an arm added to the audit after rounds exist starts from its planned seeds
        history = [first, *({**first, **r.counts} for r in rounds)]
        if outcome.failed:
            return _finish(current, outcome, rounds, [], LoopStop.FAILED, rule)
        results = collect(current)
        states = [replay(f, history, results, rule) for f in families(plan, metrics)]
        added = next_seeds(states, history[-1], rule)
        stop = LoopStop.SETTLED
        hours = options.budget_hours
        if added and hours is not None and time.monotonic() - start >= hours * 3600:
            added, stop = [], LoopStop.BUDGET_HOURS
        if added and options.budget_runs is not None:
            left = options.budget_runs - len(current.runs)
            if left < len(added):
                added, stop = added[: max(left, 0)], LoopStop.BUDGET_RUNS
        if not added:
            return _finish(current, outcome, rounds, states, stop, rule)
        counts = dict(history[-1])
        for item in added:
            counts[key(item.arm, item.scale)] += 1
        publish_round(plan.audit_dir, Round(len(rounds) + 1, counts, tuple(added)))


def round_line(
    rounds: Sequence[Round],
    first: dict[str, int],
    max_seeds: int,
    planned: int,
    runs: int,
    baselines: Collection[str] = (),
) -> str:
    """What the round about to run is, e.g. "round 2 of ≤ 3: 5 runs for qk_norm, softpick and
    the baseline (the audit now has 19 runs: the arms' verdicts are still open; a baseline seed
    narrows the open arms' noise floor)": the run count a progress line shows grows only after a
    line that says why. A baseline (one of `baselines`) has no verdict: its seeds are named apart.
    Rounds are at most one per seed an arm can still get (each round adds at most one seed to
    an arm)."""
    fewest = min(first.values(), default=max_seeds)  # an arm's (a baseline has more)
    bound = max(1 + max(0, max_seeds - fewest), len(rounds) + 1)
    if not rounds:
        return f"round 1 of ≤ {bound}: the {planned} planned runs"
    added = rounds[-1].added
    named = list(dict.fromkeys(a.arm for a in added))
    arms = [a for a in named if a not in baselines]
    bases = [a for a in named if a in baselines]
    whom = ", ".join(arms) + (f" and {_the_baselines(bases)}" if arms and bases else "")
    why = "the arms' verdicts are still open" if arms else ""
    if bases:
        why += ("; " if why else "") + "a baseline seed narrows the open arms' noise floor"
    return (
        f"round {len(rounds) + 1} of ≤ {bound}: {len(added)} more runs for "
        f"{whom or _the_baselines(bases)} (the audit now has {runs} runs: {why})"
    )


def _the_baselines(names: list[str]) -> str:
    return "the baseline" if names == ["baseline"] else "the baseline " + ", ".join(names)


def next_seeds(
    states: Sequence[FamilyState], counts: dict[str, int], rule: SequentialRule
) -> list[AddedSeed]:
    """The next round: one seed per arm still open in some family (below its maximum), and one
    for the baseline of each scale with such arms (below its cap), ranked by value per run (the
    baselines first: every verdict of their scale depends on them)."""
    value: dict[tuple[str, str], float] = {}
    why: dict[tuple[str, str], str] = {}
    for fs in states:
        family, tests = fs.family, fs.tests
        for i, arm in enumerate(family.arms):
            name = (arm, family.scale)
            if not _worth_a_seed(fs, i, counts[key(*name)], rule):
                continue
            if fs.value[i] >= value.get(name, -1.0):
                value[name] = float(fs.value[i])
                why[name] = (
                    f"{family.metric} still open (Δ = {tests.delta[0, i]:+.4g}, "
                    f"p = {tests.p[0, i]:.3g}; P(settled by the next seed) = {fs.value[i]:.2f})"
                )
        open_arms = sum(
            _worth_a_seed(fs, i, counts[key(arm, family.scale)], rule)
            for i, arm in enumerate(family.arms)
        )
        base = (family.baseline, family.scale)
        if open_arms and counts[key(*base)] < rule.baseline_cap:
            value[base] = math.inf
            why[base] = f"noise floor for {open_arms} open arm(s) on {family.metric}"
    order = sorted(value, key=lambda name: (-value[name], name))
    return [
        AddedSeed(arm, scale, counts[key(arm, scale)], why[(arm, scale)]) for arm, scale in order
    ]


def _worth_a_seed(fs: FamilyState, i: int, seeds: int, rule: SequentialRule) -> bool:
    """Arm i is open, below its maximum, and its next seed is not a last one worth nothing."""
    if fs.state[i] != LoopState.OPEN or seeds >= rule.max_seeds:
        return False
    return seeds + 1 < rule.max_seeds or fs.value[i] >= VALUELESS


def _finish(
    plan: Plan,
    outcome: AuditOutcome,
    rounds: Sequence[Round],
    states: Sequence[FamilyState],
    stop: LoopStop,
    rule: SequentialRule,
) -> SettledAudit:
    store.refresh_export(plan.audit_dir)  # results.csv: every round's runs
    budget = stop in (LoopStop.BUDGET_RUNS, LoopStop.BUDGET_HOURS)
    results = tuple(_family_result(fs, rule, budget) for fs in states)
    if stop == LoopStop.SETTLED and any(
        a.stopped != ArmStop.SETTLED for f in results for a in f.arms
    ):
        stop = LoopStop.ALL_STOPPED
    settled = SettledAudit(outcome, len(rounds) + 1, len(plan.runs), stop, results, rule)
    folder = record_dir(plan.audit_dir)
    folder.mkdir(parents=True, exist_ok=True)  # absent when the first round settled everything
    atomic_write_text(
        folder / SUMMARY,
        json.dumps(_jsonable(settled), indent=1, sort_keys=True, allow_nan=True) + "\n",
    )
    return settled


def _family_result(fs: FamilyState, rule: SequentialRule, budget: bool) -> LoopFamily:
    tests, family = fs.tests, fs.family
    sigma = float(tests.sigma[0])
    thresholds = final_thresholds(rule, tests, fs.state[None, :])[0]
    rows = []
    for i, arm in enumerate(family.arms):
        state = LoopState(int(fs.state[i]))
        delta = float(tests.delta[0, i])
        seeds, t, p = int(tests.n[0, i]), float(tests.t[0, i]), float(tests.p[0, i])
        verdict: Verdict
        stopped: ArmStop
        if fs.diverged[i]:
            verdict, stopped = DIVERGED, ArmStop.DIVERGED
        elif state.verdict is not None:
            verdict, stopped = state.verdict, ArmStop.SETTLED
        else:
            verdict = classify(delta, sigma, 1.0, 0.0)
            stopped = _arm_stop(state, seeds, rule, budget)
        se, df = float(tests.scale[0, i]), float(tests.arm_df[0, i])
        rows.append(
            LoopArm(arm, seeds, delta, t, p, verdict, stopped, se, df, float(thresholds[i]))
        )
    result = LoopFamily(
        baseline=family.baseline,
        scale=family.scale,
        metric=family.metric,
        sigma=sigma,
        sigma_dof=int(tests.df[0]),
        baseline_seeds=int(tests.n0[0]),
        arms=tuple(rows),
    )
    return result.held_to(sequential_design_rate(len(rows), rule).above_alpha)


def _arm_stop(state: LoopState, seeds: int, rule: SequentialRule, budget: bool) -> ArmStop:
    """Why an arm that did not settle stopped."""
    if seeds >= rule.max_seeds:
        return ArmStop.MAX_SEEDS
    if state is LoopState.OPEN and budget:
        return ArmStop.BUDGET
    return ArmStop.FUTILE  # stopped for futility, or open with a next seed worth nothing


STOP_SAID = {
    LoopStop.SETTLED: "every arm settled",
    LoopStop.ALL_STOPPED: "no arm is open any more",
    LoopStop.BUDGET_RUNS: "the run budget was spent",
    LoopStop.BUDGET_HOURS: "the hour budget was spent",
    LoopStop.FAILED: "runs failed",
}


def describe_stop(settled: SettledAudit) -> str:
    """E.g. "every arm stopped: 1 settled, 3 futile" or "the run budget was spent"."""
    counts = Counter(a.stopped for f in settled.families for a in f.arms)
    arms = ", ".join(f"{counts[name]} {name}" for name in ARM_STOPS if counts[name])
    said = STOP_SAID.get(LoopStop(settled.stop), settled.stop)
    return said + (f" ({arms})" if arms else "")


def _jsonable(settled: SettledAudit) -> dict[str, Any]:
    return {
        "rounds": settled.rounds,
        "runs": settled.runs,
        "stop": settled.stop,
        "rule": dataclasses.asdict(settled.rule),
        "families": [dataclasses.asdict(f) for f in settled.families],
    }
