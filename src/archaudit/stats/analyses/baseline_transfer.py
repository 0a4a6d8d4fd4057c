"""Transfer across baselines: is an arm's effect a property of the arm or of one baseline?

When an audit has several baselines (e.g. two reference architectures), each arm is judged
against each of them; the other baselines are left out of every family so that m is the same.

Two layouts are understood. In a table of anybody's runs, the baselines are arms and every other
arm is compared with each. An archaudit audit instead applies every arm to every baseline and
names the runs `<arm>@<baseline>` (the baselines themselves `baseline@<name>`): then each arm is
judged against its own baseline, and `qk_norm@llama` is paired with `qk_norm@olmo`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from archaudit.names import BASELINE
from archaudit.stats.choices.options import DEFAULT, JudgeOptions
from archaudit.stats.judging.judgement import ArmVerdict, Judgement, judge
from archaudit.stats.records.errors import DesignError
from archaudit.stats.records.serialize import JsonResult
from archaudit.stats.records.table import Table, TableLike, load_table
from archaudit.stats.records.verdicts import DIVERGED, INCOMPLETE, Verdict


def _audit_layout(table: Table, baselines: Sequence[str]) -> dict[str, Table]:
    """Per baseline, its `<arm>@<baseline>` rows with the suffix dropped; empty when the table
    does not use the audit layout."""
    if not all(f"{BASELINE}@{base}" in table.arms for base in baselines):
        return {}
    return {
        base: Table(
            tuple(
                replace(row, arm=row.arm.removesuffix(f"@{base}"))
                for row in table.rows
                if row.arm.endswith(f"@{base}")
            ),
            table.source,
        )
        for base in baselines
    }


@dataclass(frozen=True)
class ArmAcrossBaselines(JsonResult):
    """One arm's Δ and verdict against each baseline."""

    arm: str
    deltas: dict[str, float]
    verdicts: dict[str, Verdict]
    sign_agrees: bool
    verdict_flips: bool


@dataclass(frozen=True)
class BaselineTransfer(JsonResult):
    """Agreement of the arms' effects between baselines."""

    metric: str
    scale: str
    baselines: tuple[str, ...]
    sign_agreement: float
    """Share of arms whose Δ has the same sign against every baseline."""
    flipped: tuple[str, ...]
    """Arms whose verdict differs between baselines."""
    arms: tuple[ArmAcrossBaselines, ...]


def transfer_across_baselines(
    table: TableLike,
    metric: str,
    baselines: Sequence[str],
    options: JudgeOptions = DEFAULT,
) -> BaselineTransfer:
    """Judge every non-baseline arm against each baseline and compare.

    `options` judges each family; its `baseline` is replaced by each of `baselines` in turn.
    An audit's findings record judges its families itself (α split over its primary metrics,
    the loop's verdicts where it looped) and compares those with `compare_baselines`.
    """
    table = load_table(table)
    if len(set(baselines)) < 2:
        raise DesignError(
            table.source,
            f"got baselines {list(baselines)}",
            "name at least two different baselines",
        )
    return compare_baselines(_judge_each(table, metric, baselines, options))


def compare_baselines(judged: Mapping[str, Judgement]) -> BaselineTransfer:
    """Each arm's Δ and verdict in the families of `judged` (one per baseline, in order), the
    arms matched by name with an audit layout's `@<baseline>` suffix dropped."""
    baselines = tuple(judged)
    by_arm = {
        base: {v.arm.removesuffix(f"@{base}"): v for v in judgement.arms}
        for base, judgement in judged.items()
    }
    found = (_across(arm, baselines, by_arm) for arm in by_arm[baselines[0]])
    arms = tuple(arm for arm in found if arm is not None)
    return BaselineTransfer(
        metric=judged[baselines[0]].metric,
        scale=judged[baselines[0]].scale,
        baselines=baselines,
        sign_agreement=float(np.mean([a.sign_agrees for a in arms])) if arms else float("nan"),
        flipped=tuple(a.arm for a in arms if a.verdict_flips),
        arms=arms,
    )


def _judge_each(
    table: Table, metric: str, baselines: Sequence[str], options: JudgeOptions
) -> dict[str, Judgement]:
    """Each baseline's judgement: of its own `<arm>@<baseline>` runs in the audit layout, else
    of the whole table with the other baselines left out (so every family has the same m)."""
    per_baseline = _audit_layout(table, baselines)
    if per_baseline:
        return {
            base: judge(per_baseline[base], metric, options.but(baseline=BASELINE))
            for base in baselines
        }
    return {
        base: judge(
            table,
            metric,
            options.but(
                baseline=base,
                exclude=(*options.exclude, *(b for b in baselines if b != base)),
            ),
        )
        for base in baselines
    }


def _across(
    arm: str, baselines: Sequence[str], by_arm: dict[str, dict[str, ArmVerdict]]
) -> ArmAcrossBaselines | None:
    """One arm's Δ and verdict against every baseline (None when it diverged, is incomplete
    or is missing against any of them)."""
    if any(arm not in by_arm[base] for base in baselines):
        return None
    verdicts = [by_arm[base][arm] for base in baselines]
    if any(v.verdict in (DIVERGED, INCOMPLETE) for v in verdicts):
        return None
    return ArmAcrossBaselines(
        arm=arm,
        deltas={base: v.delta for base, v in zip(baselines, verdicts, strict=True)},
        verdicts={base: v.verdict for base, v in zip(baselines, verdicts, strict=True)},
        sign_agrees=len({np.sign(v.delta) for v in verdicts}) == 1,
        verdict_flips=len({v.verdict for v in verdicts}) > 1,
    )
