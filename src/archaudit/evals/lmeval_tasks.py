"""`format = "lm_eval"`: a suite task that is an lm-evaluation-harness task (the `lmeval` extra).

lm-eval builds the task's requests — its prompts, few-shot examples, target delimiter and gold
answer — and this scorer scores them, exactly as the `archaudit` lm-eval model does; per-item
results land in evals.json and items.csv like any task's, so paired tests work on them. Data is
local: `include` names a folder of task YAMLs (relative to the data root) whose datasets are
local files (`dataset_path: json` with `data_files`, as `lmeval_adapter.write_task_yaml`
writes them); without it, lm-eval's registry tasks load from the local `datasets` cache only
(offline). Only multiple-choice (log-likelihood) tasks.

    [[tasks]]
    name = "arc_easy"
    format = "lm_eval"
    metric = "acc_norm"
    params = { task = "arc_easy_local", include = "lm_tasks", num_fewshot = 0 }
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from archaudit.errors import ConfigError, DataError
from archaudit.evals.tasks import Item, LoadContext, TaskSpec, task_format

PARAMS = ("task", "include", "num_fewshot", "seed")


@task_format("lm_eval", kind="choice", delimiter=" ", metrics=("acc", "acc_norm"), generated=True)
def load_lmeval_task(spec: TaskSpec, context: LoadContext) -> list[Item]:
    """The task's documents as items: one (context, continuation) pair per choice, as lm-eval
    requests them (`Task.build_all_requests`), the gold index from `doc_to_target`."""
    task = _harness_task(spec, context.data_root)
    delimiter = task.config.target_delimiter
    if delimiter != (" " if spec.target_delimiter is None else spec.target_delimiter):
        raise ConfigError(
            f"task {spec.name!r}: lm-eval task {spec.params['task']!r} puts {delimiter!r} before "
            f"each answer; set target_delimiter = {delimiter!r} in the suite"
        )
    limit = context.limit or spec.limit
    task.build_all_requests(limit=limit, rank=0, world_size=1)
    by_doc: dict[int, list[Any]] = defaultdict(list)
    for instance in task.instances:
        by_doc[instance.doc_id].append(instance)
    items = []
    for doc_id, instances in sorted(by_doc.items()):
        instances.sort(key=lambda i: i.idx)
        target = task.doc_to_target(instances[0].doc)
        gold = (
            target
            if isinstance(target, int)
            else task.doc_to_choice(instances[0].doc).index(target)
        )
        items.append(
            Item(
                id=f"{spec.name}/{doc_id}",
                contexts=tuple(i.arguments[0] for i in instances),
                # the answer alone (acc_norm divides by its length, as lm-eval does)
                continuations=tuple(i.arguments[1][len(delimiter) :] for i in instances),
                gold=int(gold),
            )
        )
    return items


def _harness_task(spec: TaskSpec, data_root: Path) -> Any:
    unknown = sorted(set(spec.params) - set(PARAMS))
    if unknown or "task" not in spec.params:
        raise ConfigError(
            f"task {spec.name!r}: format 'lm_eval' takes params {', '.join(PARAMS)} (task is "
            f"required){f'; unknown: {unknown[0]!r}' if unknown else ''}"
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    try:
        from lm_eval.tasks import TaskManager, get_task_dict
    except ImportError:
        raise DataError(
            "format 'lm_eval' needs the `lmeval` extra: pip install 'archaudit[lmeval]'"
        ) from None
    params = spec.params
    include = _local(data_root, params["include"], spec) if "include" in params else None
    manager = TaskManager(
        include_path=str(include) if include else None, include_defaults=include is None
    )
    try:
        task = get_task_dict([params["task"]], manager)[params["task"]]
    except (KeyError, ValueError) as err:
        raise ConfigError(
            f"task {spec.name!r}: lm-eval cannot load {params['task']!r} ({err})"
        ) from None
    if task.OUTPUT_TYPE != "multiple_choice":
        raise ConfigError(
            f"task {spec.name!r}: lm-eval task {params['task']!r} is {task.OUTPUT_TYPE}; "
            "format 'lm_eval' scores multiple_choice tasks"
        )
    task.set_config(key="num_fewshot", value=int(params.get("num_fewshot", 0)))
    task.set_fewshot_seed(seed=int(params.get("seed", 1234)))
    return task


def _local(root: Path, relative: str, spec: TaskSpec) -> Path:
    path = Path(relative) if Path(relative).is_absolute() else root / relative
    if not path.exists():
        raise DataError(
            f"task {spec.name!r}: {path} does not exist (relative to the data root {root})"
        )
    return path
