"""One default for the direction of a metric: None reads it from the name, in every analysis.

Defect: `cross_scale_transfer`, `transfer_across_baselines`, `interactions` and `aggregate`
defaulted to `lower_is_better=False`, so on a loss they called the lower-loss arm a regressor,
while `judge` read the direction from the name.

Must-show 2 of issue 26: every public entry point of `archaudit.stats` (and the sequential loop
of `archaudit.audit.execute.sequential`) that takes a metric is called here on a loss, with no
direction argument, and must treat lower as better. A new entry point that takes a metric fails
`test_every_entry_point_that_takes_a_metric_is_checked` until it is added to CHECKS (or to
DIRECTION_FREE, with the reason it has no direction).
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import pkgutil
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from predict_helpers import constant, ladder
from predict_helpers import table as ladder_table

import archaudit.stats
from archaudit.errors import ConfigError
from archaudit.stats import (
    cross_scale_transfer,
    decoupling,
    fit_scaling_law,
    interactions,
    judge,
    resolve_direction,
    transfer_across_baselines,
)
from archaudit.stats.analyses.aggregate import aggregate
from archaudit.stats.analyses.scaling import LossSurface
from archaudit.stats.analyses.snr import signal_to_noise
from archaudit.stats.choices.options import JudgeOptions
from archaudit.stats.inference.items import ItemResult, ItemTable
from archaudit.stats.inference.paired import compare_item_measure
from archaudit.stats.judging.family import collect_family
from archaudit.stats.predictions.predict import check_loss, predict
from archaudit.stats.records.table import Row, Table

NOISE = (-0.01, 0.0, 0.01)
METRIC_PARAMETERS = {"metric", "metrics", "loss_metric", "downstream_metric", "measure", "family"}
"""Parameters that name a metric (a sequential `family` carries its metric)."""


def losses(means: dict[str, float], metrics=("val_loss",), scales=("s",)) -> Table:
    """Three seeds per arm; `means` in loss units (lower is better)."""
    return Table(
        tuple(
            Row(arm=arm, scale=scale, seed=seed, metric=metric, value=mean + jitter * (1 + i))
            for arm, mean in means.items()
            for scale in scales
            for i, metric in enumerate(metrics)
            for seed, jitter in enumerate(NOISE)
        )
    )


BETTER = {"baseline": 3.0, "a": 2.8, "b": 2.9, "c": 2.7}
"""Every arm has a lower loss than the baseline: better."""


def test_the_direction_comes_from_the_name_unless_given():
    assert resolve_direction("val_loss", None) is True
    assert resolve_direction("downstream_avg", None) is False
    assert resolve_direction("val_loss", False) is False


# ---------------------------------------------------------------------------------------------
# one check per entry point: called on a loss without a direction, lower must read as better


def check_judge():
    result = judge(losses(BETTER), "val_loss")
    assert result.lower_is_better is True
    assert all(v.delta > 0 and v.verdict == "improver" for v in result.arms)


def check_collect_family():
    assert collect_family(losses(BETTER), "val_loss").sign == -1.0


def check_cross_scale_transfer():
    result = cross_scale_transfer(losses(BETTER, scales=("d6", "d12")), "val_loss")
    assert all(arm.delta_small > 0 and arm.delta_large > 0 for arm in result.arms)
    assert {arm.verdict_small for arm in result.arms} == {"improver"}


def check_transfer_across_baselines():
    table = losses({**BETTER, "other": 3.0})
    result = transfer_across_baselines(table, "val_loss", ["baseline", "other"])
    assert all(d > 0 for arm in result.arms for d in arm.deltas.values())


def check_interactions():
    table = losses({"baseline": 3.0, "qk": 2.9, "gqa": 2.8, "qk+gqa": 2.7})
    result = interactions(table, "val_loss")
    assert result.main_effects["qk"] > 0 and result.main_effects["gqa"] > 0
    assert result.harmful == ()


def check_aggregate():
    table = losses(BETTER, metrics=("a/nll", "b/nll"))
    result = aggregate(table, metrics=("a/nll", "b/nll"), n_boot=50)
    assert result.lower_is_better is True
    assert all(arm.prob_improvement > 0.5 for arm in result.arms if arm.arm != "baseline")


def check_decoupling():
    """The downstream side may be a loss too (bits per byte): read from its name."""
    loss = losses({"baseline": 3.0, "a": 3.0, "b": 3.0, "c": 3.0}, metrics=("val_loss",))
    bpb = losses(BETTER, metrics=("downstream_bpb",))
    result = decoupling(Table(loss.rows + bpb.rows), downstream_metric="downstream_bpb")
    assert {arm.downstream_verdict for arm in result.arms} == {"improver"}
    assert all(arm.downstream_delta > 0 for arm in result.arms)


def check_signal_to_noise():
    """Direction-free by design (|Δ|/σ, the spread of the means): a loss and its negation as a
    score give the same numbers."""
    table = losses(BETTER)
    score = Table(tuple(Row(r.arm, r.scale, r.seed, "score", -r.value) for r in table.rows))
    (loss_row,) = signal_to_noise(table).metrics
    (score_row,) = signal_to_noise(score).metrics
    assert loss_row.effects == pytest.approx(score_row.effects)
    assert loss_row.snr == pytest.approx(score_row.snr)


def scaling_table(metric: str) -> Table:
    truth = LossSurface(
        E=1.69, A=406.4, size_exponent=0.34, B=410.7, data_exponent=0.28, huber_loss=0.0
    )
    rows = []
    # Three token counts: with two, B/D^β and E trade off exactly (two laws fit the six points).
    for index, (n, d) in enumerate((n, d) for n in (1e7, 1e8, 1e9) for d in (2e9, 2e10, 2e11)):
        values = {"params": n, "tokens": d, metric: float(truth.predict(n, d))}
        rows += [Row("baseline", f"run{index}", 0, m, float(v)) for m, v in values.items()]
    return Table(tuple(rows))


def check_fit_scaling_law():
    """The law falls with N and D: a loss is fitted, a score is refused unless declared."""
    fit = fit_scaling_law(scaling_table("val_loss"), n_boot=4)
    assert math.isclose(fit.surface.E, 1.69, rel_tol=0.05)
    with pytest.raises(ConfigError, match="higher-is-better"):
        fit_scaling_law(scaling_table("acc"), loss_metric="acc", n_boot=4)
    fit_scaling_law(scaling_table("acc"), loss_metric="acc", n_boot=4, lower_is_better=True)


def check_predict():
    """A loss is predicted with rank 1 for its lowest value; an accuracy is refused."""
    arms = {"good": constant(-0.08), "bad": constant(0.06)}
    prediction = predict(ladder_table(arms), "val_loss", ladder(), n_boot=100)
    ranks = {a.arm: a.rank for a in prediction.arms}
    assert ranks == {"good": 1, "bad": 2}
    with pytest.raises(ConfigError, match="is not a loss"):
        check_loss(ladder_table(arms, metric="acc"), "acc", None)


def check_compare_item_measure():
    """bpb is a loss: the arm with fewer bits per byte is the better one."""
    bpb, rng = {"baseline": 1.0, "better": 0.9}, random.Random(0)
    items = ItemTable(
        tuple(
            ItemResult(arm, "s", seed, "t", str(i), True, bpb=value + rng.gauss(0, 0.05))
            for arm, value in bpb.items()
            for seed in range(2)
            for i in range(20)
        )
    )
    result = compare_item_measure(items, "better", "baseline", "s", "bpb", n_boot=50)
    assert result.higher_is_better is False and result.difference.difference > 0


PILOT_AUDIT = """\
name = "pilot"
arms = ["qk_norm", "geglu"]
seeds = { noise_floor = 3, arms = 3 }
eval = { suite = "" }
recipe = { steps = 12, batch_tokens = 512, corpus_chars = 100000 }
scales = { xs = { d_model = 32, n_layers = 1, n_heads = 2, context_length = 32 } }
"""
SHIFT = {"qk_norm": -0.5, "geglu": 0.5}
"""val_loss shift per arm: qk_norm has the lower loss (better), geglu the higher."""


def finished_audit(tmp_path: Path):
    """A three-seed audit whose runs finished with val_loss = 3 + SHIFT (no training): each
    run's DONE file holds every field an executor writes."""
    from archaudit.audit.grid import store
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.setup.spec import load_audit

    path = tmp_path / "audit.toml"
    path.write_text(PILOT_AUDIT)
    plan = make_plan(load_audit(path))
    store.materialize(plan)
    for run in plan.runs:
        value = 3.0 + SHIFT.get(run.arm, 0.0) + NOISE[run.seed % 3]
        record = {"id": run.run_id, "arm": run.arm, "scale": run.scale, "seed": run.seed}
        record |= {"family": run.family, "tuned": run.tuned, "status": "ok"}
        record |= {"diverged_step": None, "metrics": {"val_loss": value}, "train": {}}
        record |= {"attempts": 1, "host": "test", "finished": 0.0}
        (plan.run_dir(run) / store.DONE).write_text(json.dumps(record))
    return plan


def check_replay(tmp_path: Path):
    """The sequential loop judges a loss as lower-is-better at every look."""
    from archaudit.audit.execute import sequential
    from archaudit.stats.simulation.sequential import SequentialRule

    plan = finished_audit(tmp_path)
    (family,) = sequential.families(plan, ("val_loss",))
    history = [sequential.initial_counts(plan)]
    state = sequential.replay(family, history, sequential.collect(plan), SequentialRule())
    delta = dict(zip(family.arms, state.tests.delta[0], strict=True))
    assert delta["qk_norm"] > 0 > delta["geglu"]


def check_pilot_effects(tmp_path: Path):
    """A pilot's effects (Δ/σ, positive = better) of a loss: lower loss, positive effect."""
    from archaudit.audit.execute import sequential

    effects = sequential.pilot_effects(finished_audit(tmp_path), "val_loss")
    assert effects[("qk_norm", "xs")] > 0 > effects[("geglu", "xs")]


CHECKS: dict[str, Callable[..., None]] = {
    "archaudit.stats.judging.judgement.judge": check_judge,
    "archaudit.stats.judging.family.collect_family": check_collect_family,
    "archaudit.stats.analyses.transfer.cross_scale_transfer": check_cross_scale_transfer,
    "archaudit.stats.analyses.baseline_transfer.transfer_across_baselines": (
        check_transfer_across_baselines
    ),
    "archaudit.stats.analyses.interactions.interactions": check_interactions,
    "archaudit.stats.analyses.aggregate.aggregate": check_aggregate,
    "archaudit.stats.analyses.decoupling.decoupling": check_decoupling,
    "archaudit.stats.analyses.snr.signal_to_noise": check_signal_to_noise,
    "archaudit.stats.analyses.scaling.fit_scaling_law": check_fit_scaling_law,
    "archaudit.stats.inference.paired.compare_item_measure": check_compare_item_measure,
    "archaudit.stats.predictions.predict.predict": check_predict,
    "archaudit.stats.predictions.predict.check_loss": check_predict,
    "archaudit.audit.execute.sequential.replay": check_replay,
    "archaudit.audit.execute.sequential.pilot_effects": check_pilot_effects,
}
"""Entry point → the check that calls it on a loss without a direction (given `tmp_path` when
it asks for one)."""

DIRECTION_FREE = {
    "archaudit.stats.predictions.predict.ladder_arrays": "the arms' means per scale, as recorded",
    "archaudit.stats.judging.family.family_design": "the design is seed counts and the test",
    "archaudit.stats.judging.grading.grade_arm": (
        "grades the evidence (seeds, scales), not a direction"
    ),
    "archaudit.stats.judging.grading.owed": (
        "names the metric in R6's words; the judge passes `by_loss`"
    ),
    "archaudit.stats.inference.noise.noise_floor": "σ has no direction",
    "archaudit.stats.inference.samples.sample_arm": "an arm's seed values, as recorded",
    "archaudit.audit.execute.sequential.families": (
        "groups the plan's arms per metric; replay judges"
    ),
    "archaudit.stats.judging.judgement.judge_loop": (
        "overlays the loop's rows (judged by `replay`, checked here) on a fixed judgement, whose "
        "direction it keeps"
    ),
}
"""Public functions that take a metric but have no direction to get wrong, and why."""

SEQUENTIAL_LOOP = "archaudit.audit.execute.sequential"


def metric_entry_points() -> set[str]:
    """Every public function of archaudit.stats (and the sequential loop) taking a metric."""
    modules = pkgutil.walk_packages(archaudit.stats.__path__, "archaudit.stats.")
    names = [m.name for m in modules if not m.ispkg]
    found = set()
    for name in [*names, SEQUENTIAL_LOOP]:
        module = importlib.import_module(name)
        for attribute, function in vars(module).items():
            if attribute.startswith("_") or not inspect.isfunction(function):
                continue
            if function.__module__ != name:
                continue
            if METRIC_PARAMETERS & set(inspect.signature(function).parameters):
                found.add(f"{name}.{attribute}")
    return found


def test_every_entry_point_that_takes_a_metric_is_checked():
    found = metric_entry_points()
    assert found - set(CHECKS) - set(DIRECTION_FREE) == set(), "add a check to CHECKS"
    assert set(CHECKS) | set(DIRECTION_FREE) <= found, "a checked entry point is gone"


@pytest.mark.parametrize("entry_point", sorted(CHECKS))
def test_a_loss_is_lower_is_better_without_a_direction_argument(entry_point, tmp_path):
    check = CHECKS[entry_point]
    check(tmp_path) if inspect.signature(check).parameters else check()


def test_no_direction_defaults_to_higher_is_better():
    """No entry point (nor JudgeOptions) defaults `lower_is_better` to anything but None (or
    requires it): the class of bug where a loss was judged as a score by default."""
    defaults = {"archaudit.stats.choices.options.JudgeOptions": JudgeOptions().lower_is_better}
    for name in sorted(metric_entry_points()):
        module, _, attribute = name.rpartition(".")
        parameter = inspect.signature(getattr(importlib.import_module(module), attribute))
        if "lower_is_better" in parameter.parameters:
            defaults[name] = parameter.parameters["lower_is_better"].default
    required = inspect.Parameter.empty
    assert all(default in (None, required) for default in defaults.values()), defaults


def test_aggregate_refuses_tasks_that_mix_directions():
    table = losses(BETTER, metrics=("a/nll", "b/score"))
    with pytest.raises(ConfigError, match="lower_is_better"):
        aggregate(table, metrics=("a/nll", "b/score"), n_boot=50)


def test_a_given_direction_still_wins_over_the_name():
    """The options' direction overrides the name: the same loss judged as a score flips."""
    table = losses({"baseline": 3.0, "qk": 2.9, "gqa": 2.8, "qk+gqa": 2.7})
    as_score = interactions(table, "val_loss", JudgeOptions(lower_is_better=False))
    assert as_score.harmful == ("gqa", "qk")
    as_loss = interactions(table, "val_loss")
    assert math.isclose(as_score.main_effects["qk"], -as_loss.main_effects["qk"])
