"""The metric registry: what each metric means, declared once (docs/metrics.md).

Modelled on lm-eval's `register_metric(..., higher_is_better=..., aggregation=...)`. Every
metric the tool writes is declared here with its direction, its range (an MDE wider than the
range cannot be detected), its unit, its chance level where it has one, and how it combines
over tasks. A task's metrics are declared once for every task by their last part
(`*/score` covers `arc_easy/score`). Readers ask `metric_info(name)`; none reads the direction
from a name.

A metric nobody declared (a column of a user's CSV) falls back to a guess from its name
(`UNDECLARED_LOSS`: loss, ppl, perplexity, bpb, bits_per_byte, nll, error read as lower is
better); its `Metric.declared` is False so a reader can say the direction was guessed.

`downstream_avg` is defined by `downstream_average` alone: every run's record, lm-eval imports
and the audit's statistics call it (tests/core/test_metric_registry.py greps that nothing else
averages task scores).

Stdlib only: `stats` (no torch) and `evals` both import it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from archaudit.registry import Registry


class Kind(StrEnum):
    """What a number is: a measurement worth judging, or a count, a flag or an interval end."""

    MEASURE = "measure"
    COUNT = "count"
    FLAG = "flag"
    BOUND = "bound"
    """The low or high end of another metric's interval (`*/acc_low`)."""


class Aggregation(StrEnum):
    """How a metric combines over the tasks of a suite."""

    PER_TASK = "per-task"
    """A task's own number: combined over tasks only by an aggregate metric."""
    MACRO_MEAN = "macro-mean"
    """The unweighted mean over tasks of their `*/score` (every task weighs the same)."""
    NONE = "none"
    """One number per run (a loss, a count): nothing to combine."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """One metric's meaning."""

    name: str
    """Its name, or `*/<last part>` for a metric every task has."""
    higher_is_better: bool
    unit: str
    low: float = -math.inf
    high: float = math.inf
    """The range its values can take (an accuracy: 0..1)."""
    chance: str | float | None = None
    """Its chance level: a number, the name of the row that holds it per task
    (`<task>/chance`), or None when it has none."""
    aggregation: Aggregation = Aggregation.NONE
    kind: Kind = Kind.MEASURE
    downstream: bool = False
    """A downstream evaluation (a task's number or an aggregate of them), either direction."""
    description: str = ""
    declared: bool = True
    """False for a metric nobody declared: its direction was guessed from its name."""

    @property
    def lower_is_better(self) -> bool:
        return not self.higher_is_better

    @property
    def span(self) -> float:
        """The width of its range (inf when unbounded)."""
        return self.high - self.low

    def within_span(self, interval: tuple[float, float]) -> tuple[float, float]:
        """A Δ's interval cut to what a difference of two of its values can be (±`span`: an
        accuracy's Δ lies in [−1, 1]). Zero stays inside, so the cut never changes whether an
        interval excludes it; an interval with a NaN end (not tested) is kept as it is."""
        low, high = interval
        if math.isnan(low) or math.isnan(high):
            return interval
        return max(low, -self.span), min(high, self.span)

    def beyond_range(self, effect: float) -> bool:
        """An effect (an MDE, a margin) wider than the whole range: no design can detect it."""
        return math.isfinite(effect) and abs(effect) > self.span


METRICS: Registry[Metric] = Registry("metric")


def register_metric(
    name: str,
    *,
    higher_is_better: bool,
    unit: str,
    range: tuple[float, float] = (-math.inf, math.inf),
    chance: str | float | None = None,
    aggregation: Aggregation = Aggregation.NONE,
    kind: Kind = Kind.MEASURE,
    downstream: bool = False,
    description: str = "",
) -> Metric:
    """Declare a metric once; a second declaration of the name is an error."""
    metric = Metric(
        name=name,
        higher_is_better=higher_is_better,
        unit=unit,
        low=range[0],
        high=range[1],
        chance=chance,
        aggregation=aggregation,
        kind=kind,
        downstream=downstream,
        description=description,
    )
    METRICS.register(name)(metric)
    return metric


TASK = "*/"
"""The prefix of a metric every task has: `*/score` is `<task>/score` for every task."""
HELDOUT = "heldout/"
UNDECLARED_LOSS = re.compile(r"loss|ppl|perplexity|bpb|bits_per_byte|nll|error", re.IGNORECASE)
"""The FALLBACK for metrics nobody declared: a name that reads as a loss is lower-is-better."""
UNDECLARED_NOT_DOWNSTREAM = re.compile(r"^(params|tokens|.*/(at_)?chance)$")
"""The FALLBACK's counts and flags, which are no downstream evaluation."""


def metric_info(name: str) -> Metric:
    """The declaration of `name` (exact, else its task pattern), else the name-based guess."""
    if name in METRICS:
        return METRICS.get(name)
    task, _, last = name.rpartition("/")
    if task and not name.startswith(HELDOUT) and TASK + last in METRICS:
        return replace(METRICS.get(TASK + last), name=name)
    return _undeclared(name)


def _undeclared(name: str) -> Metric:
    loss = UNDECLARED_LOSS.search(name) is not None
    counted = UNDECLARED_NOT_DOWNSTREAM.match(name) is not None or name.startswith(HELDOUT)
    return Metric(
        name=name,
        higher_is_better=not loss,
        unit="",
        kind=Kind.BOUND if name.endswith(("_low", "_high")) else Kind.MEASURE,
        downstream=not counted and (not loss or "/" in name),
        description="undeclared: its direction is guessed from its name",
        declared=False,
    )


def lower_is_better(name: str, given: bool | None = None) -> bool:
    """The direction to judge `name` by: `given` when the user set one, else the registry's."""
    return metric_info(name).lower_is_better if given is None else given


def downstream_average(scores: Mapping[str, float], tasks: Sequence[str]) -> float:
    """`downstream_avg`: the unweighted mean of `scores[task]` (each task's `<task>/score`, its
    main metric) over `tasks`, the tasks that carry signal in the runs being compared. NaN when
    `tasks` is empty or a run lacks one of them (the runs would not compare)."""
    if not tasks:
        return math.nan
    return sum(scores.get(task, math.nan) for task in tasks) / len(tasks)


UNIT_FRACTION = "fraction (0..1)"
NATS, BITS_PER_BYTE = "nats per token", "bits per byte"
POSITIVE, UNIT = (0.0, math.inf), (0.0, 1.0)
_TASK: dict[str, Any] = {"aggregation": Aggregation.PER_TASK, "downstream": True}
"""What every task metric shares."""

# The numbers every task of a suite writes (`archaudit.evals.suites.SuiteResult.metrics`).
# fmt: off
register_metric(TASK + "score", higher_is_better=True, unit=UNIT_FRACTION, range=UNIT,
                chance=TASK + "chance", **_TASK,
                description="a task's main metric (accuracy, normalised accuracy or MC2)")
for _name in ("acc", "acc_norm", "mc2"):
    register_metric(TASK + _name, higher_is_better=True, unit=UNIT_FRACTION, range=UNIT,
                    chance=TASK + "chance", **_TASK)
    for _end in ("_low", "_high"):
        register_metric(TASK + _name + _end, higher_is_better=True, unit=UNIT_FRACTION,
                        range=UNIT, kind=Kind.BOUND, **_TASK,
                        description="an end of the Wilson (or normal) 95% interval")
register_metric(TASK + "bpb", higher_is_better=False, unit=BITS_PER_BYTE, range=POSITIVE,
                **_TASK, description="the gold answer's bits per byte (continuous)")
register_metric(TASK + "margin", higher_is_better=True, unit=NATS, **_TASK,
                description="the gold answer's log-likelihood margin over the best distractor")
register_metric(TASK + "chance", higher_is_better=True, unit=UNIT_FRACTION, range=UNIT,
                kind=Kind.COUNT, aggregation=Aggregation.PER_TASK,
                description="the task's chance accuracy")
register_metric(TASK + "at_chance", higher_is_better=False, unit="0/1", range=UNIT,
                kind=Kind.FLAG, aggregation=Aggregation.PER_TASK,
                description="1 when the score's 95% interval reaches chance or the floor")

PRIMARY_LOSS = "val_loss"
"""The loss every audit judges (one of its primary metrics unless its file says otherwise)."""
DOWNSTREAM_AVERAGE = "downstream_avg"
"""The downstream average, the audit's second primary metric when it has an eval suite."""

# The numbers a run's DONE record holds beside the tasks' (`audit.execute.runner.run_metrics`).
register_metric(PRIMARY_LOSS, higher_is_better=False, unit=NATS, range=POSITIVE,
                description="cross-entropy on the validation split at the end of training")
register_metric("train_loss", higher_is_better=False, unit=NATS, range=POSITIVE,
                description="the training loss at the last step")
register_metric(DOWNSTREAM_AVERAGE, higher_is_better=True, unit=UNIT_FRACTION, range=UNIT,
                aggregation=Aggregation.MACRO_MEAN, downstream=True,
                description="`downstream_average` of the informative tasks' scores")
register_metric("downstream_avg_all", higher_is_better=True, unit=UNIT_FRACTION, range=UNIT,
                aggregation=Aggregation.MACRO_MEAN, downstream=True,
                description="`downstream_average` over every task, at chance or not")
register_metric("downstream_bpb", higher_is_better=False, unit=BITS_PER_BYTE, range=POSITIVE,
                aggregation=Aggregation.MACRO_MEAN, downstream=True,
                description="the mean over tasks of the gold answer's bits per byte")
register_metric("downstream_tasks", higher_is_better=True, unit="tasks", range=POSITIVE,
                kind=Kind.COUNT, description="how many tasks a run's own average counted")
for _name in ("params", "active_params", "tokens"):
    register_metric(_name, higher_is_better=False, unit=_name, range=POSITIVE, kind=Kind.COUNT,
                    description="a size, not judged as progress")
register_metric("moe_load_imbalance", higher_is_better=False, unit="E·max load",
                range=(1.0, math.inf), description="1 = balanced experts")
register_metric("moe_dropped", higher_is_better=False, unit=UNIT_FRACTION, range=UNIT,
                description="the share of token-expert assignments dropped at capacity")
register_metric("moe_router_entropy", higher_is_better=True, unit="nats", range=POSITIVE,
                description="the router's mean entropy: how spread the routing is")
register_metric(HELDOUT + "loss", higher_is_better=False, unit=NATS, range=POSITIVE)
register_metric(HELDOUT + "bits_per_byte", higher_is_better=False, unit=BITS_PER_BYTE,
                range=POSITIVE)
for _name in ("tokens", "bytes", "window", "stride", "context", "windows"):
    register_metric(HELDOUT + _name, higher_is_better=True, unit=_name, range=POSITIVE,
                    kind=Kind.COUNT, description="how the held-out text was scored")
# fmt: on
