"""The metric registry (`archaudit.metrics`): each metric's meaning declared once.

Issue 32, must-show 2 and 3: `downstream_avg` is computed by one function, and no module outside
the registry reads a metric's direction from its name.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest

import archaudit
from archaudit.metrics import (
    DOWNSTREAM_AVERAGE,
    METRICS,
    PRIMARY_LOSS,
    Kind,
    downstream_average,
    lower_is_better,
    metric_info,
    register_metric,
)
from archaudit.stats import JudgeOptions, judge
from archaudit.stats.records.table import Row, Table

SRC = Path(archaudit.__file__).parent
REGISTRY = SRC / "metrics.py"


@pytest.mark.parametrize(
    ("name", "lower", "declared"),
    [
        ("val_loss", True, True),
        ("downstream_avg", False, True),
        ("downstream_bpb", True, True),
        ("arc_easy/score", False, True),
        ("arc_easy/bpb", True, True),
        ("heldout/bits_per_byte", True, True),
        ("ppl", True, False),
        ("bits_per_byte", True, False),
        ("hellaswag_acc", False, False),
    ],
)
def test_direction_is_declared_or_guessed_from_the_name(name, lower, declared):
    info = metric_info(name)
    assert info.lower_is_better is lower
    assert info.declared is declared
    assert lower_is_better(name, not lower) is (not lower)  # the user's direction wins


def test_a_declaration_carries_range_unit_chance_and_kind():
    score = metric_info("arc_easy/score")
    assert (score.low, score.high, score.chance) == (0.0, 1.0, "*/chance")
    assert score.beyond_range(1.37) and not score.beyond_range(0.2)
    assert not metric_info("val_loss").beyond_range(50.0)
    assert metric_info("arc_easy/acc_low").kind is Kind.BOUND
    assert metric_info("arc_easy/at_chance").kind is Kind.FLAG
    assert metric_info("params").kind is Kind.COUNT


def test_a_metric_is_declared_once():
    with pytest.raises(ValueError, match="already registered"):
        register_metric("val_loss", higher_is_better=True, unit="")
    assert "val_loss" in METRICS


def test_downstream_average_is_the_mean_over_the_named_tasks():
    scores = {"a": 0.2, "b": 0.4, "c": 0.9}
    assert downstream_average(scores, ["a", "b"]) == pytest.approx(0.3)
    assert math.isnan(downstream_average(scores, ["a", "missing"]))
    assert math.isnan(downstream_average(scores, []))


AVERAGING = re.compile(r"sum\(.*\)\s*/\s*len\(|(\w+\.)?mean\(")
"""A mean written out: `sum(...) / len(...)`, `np.mean(...)`, `statistics.mean(...)`."""
TASK_SCORES = re.compile(r"/score|\bSCORE\b|\.score\b|\btasks\b")
"""A function that handles several tasks' scores."""
ALLOWED = {
    "stats/analyses/aggregate.py": "`stats aggregate` bootstraps (seeds, tasks) arrays: its "
    "vectorised macro mean and IQM resample what `downstream_average` defines; they are its "
    "analysis",
}


def _modules():
    return [p for p in sorted(SRC.rglob("*.py")) if p != REGISTRY]


def _means_over_tasks(path: Path):
    """The means written out inside functions that handle several tasks' scores."""
    for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(function, ast.FunctionDef) and TASK_SCORES.search(ast.unparse(function)):
            for node in ast.walk(function):
                if isinstance(node, ast.BinOp | ast.Call) and AVERAGING.match(ast.unparse(node)):
                    yield f"{function.name}:{node.lineno}: {ast.unparse(node)}"


def test_no_module_but_the_registry_averages_task_scores():
    """Must-show 2: no function that handles task scores writes out a mean; the mean over a
    suite's tasks goes through `downstream_average` (today's code had five such means)."""
    found = [
        f"{path.relative_to(SRC)}:{where}"
        for path in _modules()
        if str(path.relative_to(SRC)) not in ALLOWED
        for where in _means_over_tasks(path)
    ]
    assert not found, found


NAME_RULES = re.compile(r"loss\|ppl|perplexity\|")
"""The shape of a name-based direction rule: a regex alternation of loss names."""
DIRECTION_BY_NAME = re.compile(
    r"""(["'](_?loss|ppl|bpb|error)["']\s+(not\s+)?in\s+\w*metric)"""
    r"""|(metric\w*\.(endswith|startswith)\(\s*\(?["'](_?loss|ppl|bpb))"""
)


def test_no_module_outside_the_registry_reads_direction_from_a_name():
    """Must-show 3: only `archaudit.metrics` maps a name to a direction (its declared fallback);
    everyone else asks `metric_info` / `lower_is_better`."""
    found = []
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        for n, line in enumerate(text.splitlines(), start=1):
            if NAME_RULES.search(line) or DIRECTION_BY_NAME.search(line):
                found.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
        if "looks_like_loss" in text or "resolve_direction(" in text:
            found.append(f"{path.relative_to(SRC)}: calls a name rule")
    assert not found, found


def test_a_delta_interval_is_cut_to_what_a_difference_can_be():
    """Issue 46: softpick's downstream_avg interval read [−1.68, +1.68] for a score in [0, 1]."""
    score = metric_info(DOWNSTREAM_AVERAGE)
    assert score.within_span((-1.68, 1.68)) == (-score.span, score.span)
    assert score.within_span((-0.2, 0.1)) == (-0.2, 0.1)
    assert metric_info(PRIMARY_LOSS).within_span((-9.0, 9.0)) == (-9.0, 9.0)  # unbounded
    assert all(math.isnan(v) for v in score.within_span((math.nan, math.nan)))
    values = {"baseline": (0.1, 0.9, 0.5), "wild": (0.0, 1.0)}
    rows = [
        Row(arm, "s", seed, DOWNSTREAM_AVERAGE, value)
        for arm, seeds in values.items()
        for seed, value in enumerate(seeds)
    ]
    (arm,) = judge(Table(tuple(rows)), DOWNSTREAM_AVERAGE, JudgeOptions(scale="s")).arms
    low, high = arm.interval
    assert -score.span <= low < 0 < high <= score.span
