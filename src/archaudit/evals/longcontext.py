"""Long-context retrieval: a key-value needle at several depths of a haystack 1×, 2× and 4× the
model's training context, accuracy per (length, depth). Positional schemes and softmax
replacements that look alike at the training length part ways here.

    [[tasks]]
    name = "needle"
    format = "long_context"
    limit = 60                      # items in all, spread over the length × depth cells
    params = { lengths = [1, 2, 4], depths = [0.0, 0.5, 1.0], seed = 0 }

The haystack is grammar text of the embedded corpus by default, or `params.haystack`, a text
file under the data root. `params.context` replaces the model's training context as the unit
of length (to keep a large model's 4× affordable on a CPU). Inputs past the model's own length
are scored in full when its positions extrapolate, else cut from the left (the needle near the
start is then lost, which is the point).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from archaudit.data.probes import needle
from archaudit.data.synthetic import paragraph
from archaudit.errors import ConfigError, DataError
from archaudit.evals.probes import probe_items
from archaudit.evals.scoring import ScoringModel
from archaudit.evals.tasks import Item, LoadContext, TaskSpec, task_format

DEFAULTS = {"lengths": [1, 2, 4], "depths": [0.0, 0.25, 0.5, 0.75, 1.0], "seed": 0}
MAX_MULTIPLE = 64.0
"""The longest prompt, in multiples of the context: 64× a 2k context is a 128k-token prompt."""
PER_CELL = 8  # items per (length, depth) when the task sets no limit


def cell_name(multiple: float, depth: float) -> str:
    return f"{multiple:g}x/depth={depth:g}"


@task_format("long_context", kind="cloze", delimiter="", beyond_context=True, generated=True)
def long_context(spec: TaskSpec, context: LoadContext) -> list[Item]:
    params = {**DEFAULTS, **spec.params}
    unknown = set(params) - {*DEFAULTS, "haystack", "context"}
    if unknown:
        raise ConfigError(
            f"task {spec.name!r}: unknown params {sorted(unknown)} for long_context "
            f"(allowed: lengths, depths, seed, haystack, context)"
        )
    _check_params(spec.name, params)
    model = context.model
    if model is None:
        raise ConfigError(
            f"task {spec.name!r}: long_context sizes its prompts for a model: give one"
        )
    unit = int(params.get("context", model.context_length))
    cells = [(m, d) for m in params["lengths"] for d in params["depths"]]
    source = _haystack_source(params.get("haystack"), context)
    rng = random.Random(params["seed"])
    items = []
    for index, (multiple, depth) in enumerate(cells):
        target = int(multiple * unit)
        count = _share(context.limit, len(cells), index) if context.limit else PER_CELL
        examples = [_retrieval(model, rng, source, target, depth) for _ in range(count)]
        name = cell_name(multiple, depth)
        items += probe_items(examples, tag=f"{spec.name}/{name}", group=name)
    return items


def _check_params(task: str, params: dict[str, Any]) -> None:
    """Each param within its range, so that `lengths = [-1]` is refused, not scored: lengths are
    multiples of the context in (0, MAX_MULTIPLE], depths fractions in [0, 1]."""
    ranges = {"lengths": (0.0, MAX_MULTIPLE, "in (0, {hi:g}]"), "depths": (0.0, 1.0, "in [0, 1]")}
    for key, (low, high, text) in ranges.items():
        values = params[key]
        ok = (
            isinstance(values, list)
            and values
            and all(
                _is_number(v) and (low < v if key == "lengths" else low <= v) and v <= high
                for v in values
            )
        )
        if not ok:
            raise ConfigError(
                f"task {task!r}: params.{key} = {values!r} must be a non-empty list of numbers "
                + text.format(hi=high)
            )
    for key in ("seed", "context"):
        value = params.get(key, 1)
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            raise ConfigError(f"task {task!r}: params.{key} = {value!r} must be a whole number")
    if params.get("context") == 0:
        raise ConfigError(f"task {task!r}: params.context = 0 must be >= 1 token")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _share(limit: int, cells: int, index: int) -> int:
    """Cell `index`'s part of `limit` items: equal parts, the first `limit % cells` cells one
    more, so the task has exactly `limit` items (a ceiling per cell would give more)."""
    return limit // cells + (index < limit % cells)


def _retrieval(
    model: ScoringModel,
    rng: random.Random,
    source: Callable[[random.Random, int], str],
    target_tokens: int,
    depth: float,
) -> tuple[str, str]:
    """A needle example whose prompt is about `target_tokens` tokens long."""
    overhead = len(model.encode(needle(random.Random(0), "", depth).prompt)) + 2
    text = source(rng, 8 * target_tokens)  # ample characters for any tokenizer
    haystack = model.decode(model.encode(text)[: max(target_tokens - overhead, 1)])
    probe = needle(rng, haystack, depth)
    return probe.prompt, probe.answer


def _haystack_source(path: str | None, context: LoadContext) -> Callable[[random.Random, int], str]:
    """Grammar of the embedded corpus, or random windows of a text file under the data root."""
    if path is None:
        return paragraph
    file = context.data_root / path
    if not file.is_file():
        raise DataError(
            f"long-context haystack {file} not found; set ARCHAUDIT_DATA or "
            "--data-root, or drop params.haystack to use the embedded corpus"
        )
    text = file.read_text(encoding="utf-8")

    def window(rng: random.Random, chars: int) -> str:
        start = rng.randrange(max(len(text) - chars, 1))
        return text[start : start + chars]

    return window
