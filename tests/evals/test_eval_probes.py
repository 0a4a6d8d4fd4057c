"""In-context and long-context probes: deterministic, sized right, and they measure something."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from eval_helpers import tiny_archaudit_lm

from archaudit.evals import TaskSpec, evaluate, score_task
from archaudit.evals.longcontext import cell_name
from archaudit.evals.tasks import LoadContext, load_items
from archaudit.model import build_model
from archaudit.model.load import load_model

PROBES = ("associative_recall", "noisy_recall", "selective_copy", "induction")


def _items(spec: TaskSpec, limit: int, model=None) -> list:
    context = LoadContext(data_root=Path("."), limit=limit, model=model or tiny_archaudit_lm())
    return load_items(spec, context)


@pytest.mark.parametrize("generator", PROBES)
def test_probe_items_are_seeded(generator: str) -> None:
    def prompts(seed: int) -> list[str]:
        spec = TaskSpec(name=generator, format="probe", params={"seed": seed})
        return [i.contexts[0] + "|" + i.continuations[0] for i in _items(spec, 20)]

    assert prompts(3) == prompts(3)
    assert prompts(3) != prompts(4)


def test_long_context_cells_have_the_target_lengths() -> None:
    model = tiny_archaudit_lm(context_length=64)
    spec = TaskSpec(
        name="needle", format="long_context", params={"lengths": [1, 2, 4], "depths": [0.0, 1.0]}
    )
    items = _items(spec, 12, model)
    assert sorted({i.group for i in items}) == sorted(
        cell_name(m, d) for m in (1, 2, 4) for d in (0.0, 1.0)
    )
    for item in items:
        multiple = float(item.group.split("x/")[0])
        n_tokens = len(model.encode(item.contexts[0]))
        assert abs(n_tokens - multiple * 64) <= 8, (item.group, n_tokens)
        assert item.continuations[0].isdigit()


@pytest.mark.parametrize(("position", "scored_in_full"), [("rope", True), ("learned", False)])
def test_long_context_runs_past_the_training_length_when_positions_allow(
    position: str, scored_in_full: bool
) -> None:
    model = tiny_archaudit_lm(context_length=32, position={"name": position})
    assert (model.position_limit is None) == scored_in_full
    spec = TaskSpec(name="needle", format="long_context", params={"lengths": [4], "depths": [0.5]})
    result = score_task(model, spec, _items(spec, 2, model), show_progress=False)
    assert set(result.groups) == {"4x/depth=0.5"} and result.acc.n == 2


def test_trained_model_beats_untrained_on_the_probes(trained_run: Path) -> None:
    """Must-show 4: after a short training on the embedded corpus the probes move."""
    trained = evaluate(trained_run, "demo", limit=60, show_progress=False)
    model, tokenizer = load_model(trained_run)
    torch.manual_seed(0)
    untrained = evaluate((build_model(model.cfg), tokenizer), "demo", limit=60, show_progress=False)
    for name in PROBES:  # the answer's log-likelihood rises on every in-context probe
        assert trained.tasks[name].mean_logprob > untrained.tasks[name].mean_logprob + 0.5, name
    trained_correct = sum(i.correct for t in trained.tasks.values() for i in t.items)
    untrained_correct = sum(i.correct for t in untrained.tasks.values() for i in t.items)
    assert trained_correct > untrained_correct
    # every task weighed, at chance or not (downstream_avg leaves chance-level tasks out)
    assert trained.metrics["downstream_avg_all"] > untrained.metrics["downstream_avg_all"]
    assert trained.downstream_bpb < untrained.downstream_bpb - 0.1


@pytest.mark.parametrize(("limit", "depths"), [(20, [0.0, 0.5, 1.0]), (20, None), (5, None)])
def test_long_context_limit_is_the_number_of_items(limit: int, depths: list | None) -> None:
    # 3 lengths × 3 depths = 9 cells: a ceiling per cell gave 27 items for --limit 20.
    params = {"lengths": [1, 2, 4]} | ({"depths": depths} if depths else {})
    spec = TaskSpec(name="needle", format="long_context", params=params)
    items = _items(spec, limit, tiny_archaudit_lm(context_length=16))
    assert len(items) == limit
    per_cell = sorted({i.group: sum(j.group == i.group for j in items) for i in items}.values())
    assert per_cell[-1] - per_cell[0] <= 1, "spread evenly over the cells"


def test_every_demo_task_keeps_to_the_limit() -> None:
    from archaudit.evals import load_suite

    model = tiny_archaudit_lm(context_length=16)
    for task in load_suite("demo").tasks:
        assert len(_items(task, 20, model)) <= 20, task.name
