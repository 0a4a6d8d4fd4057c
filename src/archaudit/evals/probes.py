"""In-context probes as a task format: seeded (prompt, answer) examples scored as cloze items.

The generators live in `archaudit.data.probes` (the embedded training corpus contains the same
formats); here an example is correct when greedy decoding reproduces the answer, and its
log-likelihood is kept per item. A suite task reads:

    [[tasks]]
    name = "associative_recall"
    format = "probe"
    limit = 200
    params = { generator = "associative_recall", seed = 0, n_pairs = 8 }
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from archaudit.data.probes import PROBES, Probe
from archaudit.data.synthetic import agreement_pair
from archaudit.errors import ConfigError
from archaudit.evals.tasks import Item, LoadContext, TaskSpec, task_format

DEFAULT_EXAMPLES = 200


def probe_items(
    examples: Iterable[Probe | tuple[str, str]], *, tag: str, group: str = ""
) -> list[Item]:
    """Cloze items from (prompt, answer) examples; ids are `tag:index`."""
    items = []
    for i, example in enumerate(examples):
        prompt, answer = (example.prompt, example.answer) if isinstance(example, Probe) else example
        items.append(
            Item(id=f"{tag}:{i}", contexts=(prompt,), continuations=(answer,), group=group)
        )
    return items


def probe_params(spec: TaskSpec) -> tuple[str, int, dict]:
    """(generator name, seed, generator keyword arguments) from a task's `params`."""
    params = dict(spec.params)
    name = params.pop("generator", spec.name)
    seed = params.pop("seed", 0)
    if not isinstance(seed, int):
        raise ConfigError(f"task {spec.name!r}: params.seed = {seed!r} must be an integer")
    return name, seed, params


@task_format("probe", kind="cloze", delimiter="", generated=True)
def probe(spec: TaskSpec, context: LoadContext) -> list[Item]:
    name, seed, kwargs = probe_params(spec)
    generate = PROBES.get(name)
    rng = random.Random(seed)
    n = context.limit or DEFAULT_EXAMPLES
    try:
        examples = [generate(rng, **kwargs) for _ in range(n)]
    except TypeError as err:  # an unknown or mistyped generator parameter
        raise ConfigError(f"task {spec.name!r}: bad params for probe {name!r}: {err}") from None
    return probe_items(examples, tag=f"{name}/{seed}")


@task_format("agreement", kind="choice", delimiter="\n", generated=True)
def agreement(spec: TaskSpec, context: LoadContext) -> list[Item]:
    """Minimal pairs from the embedded grammar: subject–verb agreement across a phrase or
    clause. Each sentence is scored as a document of its own (after a newline), like BLiMP."""
    _, seed, _ = probe_params(spec)
    rng = random.Random(seed)
    return [
        Item(id=f"agreement/{seed}:{i}", contexts=("",), continuations=agreement_pair(rng))
        for i in range(context.limit or DEFAULT_EXAMPLES)
    ]
