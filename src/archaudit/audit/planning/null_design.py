"""What `archaudit simulate-null` simulates: a fixed design (`AuditDesign`), or the closed loop
of `run --until-settled` (its `SequentialRule` over a number of arms), built from the numbers
given or taken from an audit file, a results table or an audit folder (`--like`).

The loop's rule is the audit's own (`audit.execute.sequential.sequential_rule`: α split over the
primary metrics by `stats.choices.options.primary_alpha`), so a simulated loop is the loop `run`
would run."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from archaudit.errors import ConfigError
from archaudit.names import BASELINE
from archaudit.ranges import COUNT, SEED, Range

if TYPE_CHECKING:
    from archaudit.audit.grid.plan import Plan
    from archaudit.stats.choices.options import JudgeOptions
    from archaudit.stats.simulation.design import AuditDesign
    from archaudit.stats.simulation.sequential import SequentialRule


@dataclass(frozen=True, kw_only=True)
class NullOptions:
    """How `simulate-null` simulates: where the design comes from, what is planted, the seed
    noise (one flag per field)."""

    like: Path | None = None
    """Take the design (arms, seeds per arm, baseline and anchor seeds) from an audit file
    (.toml), a results CSV or an audit directory, instead of --n-arms/--seeds."""
    metric: str | None = None
    """With --like CSV: the metric (default: first)."""
    audits: int = field(default=2000, metadata={"range": COUNT})
    """Simulated audits."""
    effect: float = 0.0
    """Planted effect in σ."""
    effect_arms: int = field(default=0, metadata={"range": Range(0)})
    """Arms with it."""
    seed: int = field(default=0, metadata={"range": SEED})
    """Seed of the simulation."""
    sequential: bool = False
    """The `run --until-settled` loop, --seeds at most."""
    noise: str = field(default="normal", metadata={"metavar": "MODEL"})
    """Seed noise: normal, t3, lognormal:S, hetero:F[:K] (K arms with seed σ × F), or panel
    (all eight; prints each rate and the worst)."""


@dataclass(frozen=True)
class NullDesign:
    """One design to simulate: `fixed`, or the loop's `rule` over `loop_arms` arms."""

    fixed: AuditDesign | None = None
    rule: SequentialRule | None = None
    loop_arms: int = 0


def loop_rule(options: JudgeOptions, max_seeds: int, baseline_seeds: int | None) -> SequentialRule:
    """The rule of `run --until-settled` at `options.alpha`, at most `max_seeds` seeds per arm,
    the baseline starting at `baseline_seeds` (None: 3, the protocol's noise floor)."""
    from archaudit.stats.simulation.sequential import SequentialRule

    _check_holm(options)
    return SequentialRule(
        alpha=options.alpha,
        max_seeds=max_seeds,
        baseline_seeds=baseline_seeds or 3,
        calibrated=True,
    )


def _check_holm(options: JudgeOptions) -> None:
    if options.correction != "holm":
        raise ConfigError(
            f"--sequential uses Holm across arms; --correction {options.correction} is not"
        )


def design_like(path: Path, metric: str | None, options: JudgeOptions) -> NullDesign:
    """The design of `path`: an audit file's plan (the loop's rule when its [seeds] policy is
    sequential, else its seeds per arm at the first baseline and scale), or a results table's
    or audit folder's family, as `archaudit stats` judges it."""
    if path.suffix != ".toml":
        return NullDesign(fixed=_table_design(path, metric, options))
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.setup.spec import load_audit

    plan = make_plan(load_audit(path))
    if plan.spec.seeds.policy == "sequential":
        return _loop_design(plan, options)
    return NullDesign(fixed=_plan_design(plan, options))


def _first_family(plan: Plan) -> Counter[str]:
    """Seeds per arm (and the baseline) of the plan's first baseline and scale."""
    first = plan.runs[0]
    return Counter(
        r.arm for r in plan.runs if (r.baseline, r.scale) == (first.baseline, first.scale)
    )


def _loop_design(plan: Plan, options: JudgeOptions) -> NullDesign:
    """The loop over the plan's first family, by the audit's own rule."""
    from archaudit.audit.execute.sequential import SettleOptions, primary_metrics, sequential_rule

    _check_holm(options)
    tested = [arm for arm in _first_family(plan) if arm.split("@")[0] != BASELINE]
    settle = SettleOptions(max_seeds=plan.spec.seeds.max, alpha=options.alpha)
    rule = sequential_rule(plan, settle, len(primary_metrics(plan, settle)))
    return NullDesign(rule=rule, loop_arms=len(tested))


def _plan_design(plan: Plan, options: JudgeOptions) -> AuditDesign:
    from archaudit.stats import AuditDesign

    seeds = _first_family(plan)
    base = next(arm for arm in seeds if arm.split("@")[0] == BASELINE)
    return AuditDesign.judged_by(
        options, [n for arm, n in seeds.items() if arm != base], seeds[base]
    )


def _table_design(path: Path, metric: str | None, options: JudgeOptions) -> AuditDesign:
    """The family `archaudit stats` would judge in the table `path` (loaded as findings load
    it: `audit.results.source.load_source`)."""
    from archaudit.audit.results.source import load_source
    from archaudit.stats import family_design

    table = load_source(path).table
    assert table is not None  # not partial: an audit with no finished run raised
    return family_design(table, metric or table.metrics[0], options)
