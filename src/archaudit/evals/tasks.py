"""Tasks: items to score, the registry of task formats, and scoring a task into per-item results.

A task format turns a file (or a generator) into `Item`s; every item is a few (context,
continuation) requests. Three kinds of scoring cover all benchmarks:

- `choice`: the item is correct when its gold request has the highest log-likelihood (`acc`),
  or the highest per character of the continuation (`acc_norm`, as lm-evaluation-harness).
  Multiple choice, schema (Winograd-style partial scoring) and minimal pairs are this kind.
- `cloze`: one request, correct when greedy decoding produces the continuation (LAMBADA's `acc`,
  the in-context probes).
- `generate`: one request scored like cloze, but correct when the model's free greedy output
  matches the continuation by the format's `match` (key-value retrieval: a substring).

A choice item may have several true answers (TruthfulQA's `mc2_targets`): it is correct when the
argmax is one of them, and `mc2` is the normalised probability mass on the true answers (lm-eval's
`process_results_mc2`). Beside accuracy every item records two continuous numbers that carry far
more signal at small scale (Heineman et al. 2025, "Signal and Noise"; OLMES): the bits per byte of
the gold continuation and, for choice items, the log-probability margin of the best true answer
over the best wrong one. A task whose score cannot be told from chance (its 95% interval reaches
the chance level; for cloze tasks the floor, 0) is flagged `at_chance`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from archaudit.errors import ConfigError, DataError, did_you_mean
from archaudit.evals.metrics import Accuracy, accuracy, mean_interval
from archaudit.evals.scoring import Score, ScoringModel, encode_pairs, score_tokens
from archaudit.registry import Registry

Kind = Literal["choice", "cloze", "generate"]
CHANCE_TOLERANCE = 1e-9
"""A Wilson interval's lower end at 0 correct is 0 only up to rounding (3e-18)."""


@dataclass(frozen=True, slots=True)
class Item:
    """One question. Contexts pair with continuations; a single context is shared by all."""

    id: str
    """Stable across runs (file stem and line, or generator and index): paired tests join on it."""
    contexts: tuple[str, ...]
    continuations: tuple[str, ...]
    gold: int = 0
    group: str = ""
    """Sub-task for per-group accuracy: BLiMP paradigm, long-context length and depth."""
    true: tuple[int, ...] = ()
    """Every true choice when there are several (TruthfulQA MC2); () means just `gold`."""

    @property
    def true_choices(self) -> tuple[int, ...]:
        return self.true or (self.gold,)

    @property
    def n_choices(self) -> int:
        return max(len(self.contexts), len(self.continuations))

    def requests(self, prompt_suffix: str, delimiter: str) -> list[tuple[str, str]]:
        contexts = self.contexts * (self.n_choices // len(self.contexts))
        continuations = self.continuations * (self.n_choices // len(self.continuations))
        return [
            (c + prompt_suffix if c else c, delimiter + x)
            for c, x in zip(contexts, continuations, strict=True)
        ]


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """One task of a suite, as written in its TOML `[[tasks]]` table."""

    name: str
    format: str
    """A registered task format (`archaudit.evals.tasks.FORMATS`)."""
    path: str | None = None
    """Data file, directory or glob, relative to the data root."""
    fields: Mapping[str, str | list[str]] = field(default_factory=dict)
    """Field mapping {format's field: the file's field} for JSONL files with other names;
    `choices` may name several fields, one choice each (PIQA's `["sol1", "sol2"]`)."""
    limit: int | None = None
    """Items to score (spread evenly over the files of a multi-file task); None = all."""
    metric: str = "acc"
    """The task's number in the suite's macro average: acc | acc_norm | mc2."""
    prompt: str | None = None
    """Template of the context from a JSONL row's fields, as lm-eval's `doc_to_text`:
    "Question: {goal}\\nAnswer:" (formats with a `query` field; replaces it)."""
    labels: str | None = None
    """Line-aligned file of gold labels, relative to the data root (PIQA's valid-labels.lst)."""
    prompt_suffix: str = ""
    """Appended to every non-empty context (e.g. "\\nAnswer:" to match lm-eval's ARC prompt)."""
    target_delimiter: str | None = None
    """Put before every continuation; None = the format's default (" " for text benchmarks)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Format-specific parameters (probe generator, lengths, seed, ...)."""


@dataclass(frozen=True, kw_only=True)
class LoadContext:
    """What a loader may need beyond its spec."""

    data_root: Path
    limit: int | None
    model: ScoringModel | None
    """Generators size their prompts from the model's context length and tokenizer; file
    formats load without one (so their data is checked before a model loads)."""


Loader = Callable[[TaskSpec, LoadContext], list[Item]]


@dataclass(frozen=True, kw_only=True)
class TaskFormat:
    name: str
    kind: Kind
    load: Loader
    delimiter: str = " "
    fields: Mapping[str, str] = field(default_factory=dict)
    """The format's fields and the names files use for them by default."""
    metrics: tuple[str, ...] = ("acc",)
    beyond_context: bool = False
    """Score inputs longer than the model's `max_length` (up to its `position_limit`)."""
    generated: bool = False
    """Items come from a generator configured by `params`, not from a file at `path`."""
    params: tuple[str, ...] = ()
    """The `params` a file format takes (a generated one checks its own)."""
    match: Callable[[TaskSpec, str, str], bool] | None = None
    """`generate` kind: whether (spec, output, gold continuation) counts as correct."""


FORMATS: Registry[TaskFormat] = Registry("task format")


def task_format(name: str, *, kind: Kind, **options: Any) -> Callable[[Loader], Loader]:
    """Register a loader as the task format `name`; `options` are `TaskFormat` fields."""

    def register(load: Loader) -> Loader:
        FORMATS.register(name)(TaskFormat(name=name, kind=kind, load=load, **options))
        return load

    return register


def check_spec(spec: TaskSpec, *, where: str) -> TaskFormat:
    """The spec's format, after checking the spec's keys against what the format takes."""
    try:
        fmt = FORMATS.get(spec.format)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    if spec.metric not in fmt.metrics:
        raise ConfigError(
            f"{where}: metric {spec.metric!r} is not reported by format {fmt.name!r}"
            f"{did_you_mean(spec.metric, fmt.metrics)}"
        )
    for key in spec.fields:
        if key not in fmt.fields:
            raise ConfigError(
                f"{where}: format {fmt.name!r} has no field {key!r}{did_you_mean(key, fmt.fields)}"
            )
    if fmt.generated and spec.path is not None:
        raise ConfigError(f"{where}: format {fmt.name!r} generates its items; remove `path`")
    if spec.params and not (fmt.generated or fmt.params):
        raise ConfigError(f"{where}: format {fmt.name!r} reads a file and takes no `params`")
    if fmt.generated and (spec.prompt is not None or spec.labels is not None):
        raise ConfigError(
            f"{where}: format {fmt.name!r} generates its items; remove `prompt`/`labels`"
        )
    if spec.labels is not None and "gold" not in fmt.fields:
        raise ConfigError(f"{where}: format {fmt.name!r} has no gold label; remove `labels`")
    return fmt


def load_items(spec: TaskSpec, context: LoadContext) -> list[Item]:
    items = check_spec(spec, where=f"task {spec.name!r}").load(spec, context)
    if not items:
        raise DataError(
            f"task {spec.name!r} has no items ({spec.path or spec.format}): "
            "refusing to score an empty task"
        )
    return items


def task_requests(spec: TaskSpec, items: list[Item]) -> list[tuple[str, str]]:
    """Every (context, continuation) text pair of the items, in order, as the task scores them."""
    fmt = FORMATS.get(spec.format)
    delimiter = fmt.delimiter if spec.target_delimiter is None else spec.target_delimiter
    return [r for item in items for r in item.requests(spec.prompt_suffix, delimiter)]


# ---------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, slots=True)
class ItemResult:
    id: str
    group: str
    logprobs: tuple[float, ...]
    """Summed log-likelihood of each choice (a cloze item has one)."""
    predicted: int
    """Argmax choice; for a cloze item 0 when greedy decoding gives the continuation, else -1."""
    predicted_norm: int | None
    gold: int
    correct: bool
    correct_norm: bool | None
    gold_bpb: float
    """Bits per UTF-8 byte of the gold continuation (delimiter included), as OLMES scores it."""
    margin: float | None
    """Log-probability of the best true choice minus the best wrong one (None for cloze)."""
    mc2: float | None = None
    """Normalised probability mass on the true choices (lm-eval's MC2), for choice items."""
    output: str | None = None
    """The greedy output of a `generate` item."""

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, kw_only=True)
class TaskResult:
    name: str
    kind: Kind
    metric: str
    acc: Accuracy
    acc_norm: Accuracy | None
    mean_logprob: float
    """Mean log-likelihood of the gold continuation (nats)."""
    groups: dict[str, Accuracy]
    items: tuple[ItemResult, ...]
    truncated_contexts: int = 0
    """Requests whose context lost tokens from the left to fit the model (lm-eval's rule)."""
    mc2: Accuracy | None = None
    """Mean MC2 with a normal 95% interval (choice tasks)."""
    chance: float = 0.0
    """The score of guessing: mean share of true choices per item (0 for cloze: the floor)."""

    @property
    def score(self) -> float:
        """The value that enters the suite's macro average."""
        return self._scored.value

    @property
    def _scored(self) -> Accuracy:
        return getattr(self, self.metric)

    @property
    def at_chance(self) -> bool:
        """The score's 95% interval reaches chance (or the floor): it says nothing here."""
        return self._scored.low <= self.chance + CHANCE_TOLERANCE

    @property
    def bpb(self) -> float:
        """Mean bits per byte of the gold continuation over the items."""
        return sum(r.gold_bpb for r in self.items) / len(self.items)

    @property
    def margin(self) -> float | None:
        """Mean log-probability margin of the true choices over the best wrong one."""
        margins = [r.margin for r in self.items if r.margin is not None]
        return sum(margins) / len(margins) if margins else None

    def to_dict(self, *, include_items: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "metric": self.metric,
            "score": self.score,
            "chance": self.chance,
            "at_chance": self.at_chance,
            "acc": self.acc.to_dict(),
            "acc_norm": self.acc_norm.to_dict() if self.acc_norm else None,
            "mc2": self.mc2.to_dict() if self.mc2 else None,
            "bpb": self.bpb,
            "margin": self.margin,
            "mean_logprob": self.mean_logprob,
            "truncated_contexts": self.truncated_contexts,
            "groups": {g: a.to_dict() for g, a in self.groups.items()},
        }
        if include_items:
            out["items"] = [item.to_dict() for item in self.items]
        return out


def score_task(
    model: ScoringModel,
    spec: TaskSpec,
    items: list[Item],
    *,
    batch_size: int = 32,
    show_progress: bool = True,
) -> TaskResult:
    """Score every request of every item in one batched pass, then judge each item."""
    fmt = check_spec(spec, where=f"task {spec.name!r}")
    requests = task_requests(spec, items)
    pairs = encode_pairs(model, requests)
    max_length = None
    if fmt.beyond_context:
        max_length = model.position_limit or max(len(c) + len(x) for c, x in pairs)
    scores = score_tokens(
        model,
        pairs,
        max_length=max_length,
        batch_size=batch_size,
        show_progress=show_progress,
        description=spec.name,
    )
    judge = _judge_choice if fmt.kind == "choice" else _judge_cloze
    normalise = "acc_norm" in fmt.metrics
    results, start = [], 0
    for item in items:
        end = start + item.n_choices
        texts = [continuation for _, continuation in requests[start:end]]
        results.append(judge(item, scores[start:end], texts, normalise))
        start = end
    if fmt.match is not None:
        results = _judge_generated(model, spec, fmt.match, pairs, items, results)
    return _task_result(spec, fmt, items, results, truncated=sum(s.truncated for s in scores))


def _task_result(
    spec: TaskSpec,
    fmt: TaskFormat,
    items: list[Item],
    results: list[ItemResult],
    *,
    truncated: int,
) -> TaskResult:
    groups: dict[str, list[bool]] = {}
    for r in results:
        groups.setdefault(r.group, []).append(r.correct)
    choice = fmt.kind == "choice"
    chance = sum(len(i.true_choices) / i.n_choices for i in items) / len(items) if choice else 0.0
    return TaskResult(
        name=spec.name,
        kind=fmt.kind,
        metric=spec.metric,
        acc=accuracy([r.correct for r in results]),
        acc_norm=accuracy([bool(r.correct_norm) for r in results])
        if "acc_norm" in fmt.metrics
        else None,
        mc2=mean_interval([r.mc2 for r in results if r.mc2 is not None]) if choice else None,
        mean_logprob=sum(r.logprobs[r.gold] for r in results) / len(results),
        groups={g: accuracy(flags) for g, flags in sorted(groups.items()) if g},
        items=tuple(results),
        truncated_contexts=truncated,
        chance=chance,
    )


def _judge_generated(
    model: ScoringModel,
    spec: TaskSpec,
    match: Callable[[TaskSpec, str, str], bool],
    pairs: list[tuple[list[int], list[int]]],
    items: list[Item],
    results: list[ItemResult],
) -> list[ItemResult]:
    """Correct when the greedy output, at most twice the gold's tokens (or
    `params.max_new_tokens`), matches the gold continuation by the format's rule."""
    from archaudit.evals.generation import greedy_text

    judged = []
    for (context, gold_ids), item, result in zip(pairs, items, results, strict=True):
        budget = int(spec.params.get("max_new_tokens", 2 * len(gold_ids) + 2))
        output = greedy_text(model, context, max_new_tokens=budget)
        hit = match(spec, output, item.continuations[0].strip())
        judged.append(replace(result, correct=hit, predicted=0 if hit else -1, output=output))
    return judged


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=values.__getitem__)  # first maximum, as numpy's argmax


def bits_per_byte(logprob: float, text: str) -> float:
    """Bits per UTF-8 byte of a continuation scored `logprob` nats."""
    return -logprob / math.log(2) / max(len(text.encode("utf-8")), 1)


def mc2(logprobs: Sequence[float], true: Sequence[int]) -> float:
    """lm-eval's `process_results_mc2`: the probability mass on the true choices after
    normalising the choices' probabilities to sum to one (computed stably, in log space)."""
    top = max(logprobs)
    weights = [math.exp(lp - top) for lp in logprobs]
    return sum(weights[i] for i in true) / sum(weights)


def _judge_choice(item: Item, scores: list[Score], texts: list[str], normalise: bool) -> ItemResult:
    logprobs = [s.logprob for s in scores]
    true = item.true_choices
    predicted = _argmax(logprobs)
    predicted_norm = None
    if normalise:
        # lm-eval's acc_norm divides by the choice's length in characters, delimiter excluded.
        chars = item.continuations * (item.n_choices // len(item.continuations))
        predicted_norm = _argmax(
            [lp / max(len(c), 1) for lp, c in zip(logprobs, chars, strict=True)]
        )
    wrong = [lp for i, lp in enumerate(logprobs) if i not in true]
    return ItemResult(
        id=item.id,
        group=item.group,
        logprobs=tuple(logprobs),
        predicted=predicted,
        predicted_norm=predicted_norm,
        gold=item.gold,
        correct=predicted in true,
        correct_norm=None if predicted_norm is None else predicted_norm in true,
        gold_bpb=bits_per_byte(logprobs[item.gold], texts[item.gold]),
        margin=max(logprobs[i] for i in true) - max(wrong) if wrong else None,
        mc2=mc2(logprobs, true),
    )


def _judge_cloze(item: Item, scores: list[Score], texts: list[str], normalise: bool) -> ItemResult:
    (score,) = scores
    return ItemResult(
        id=item.id,
        group=item.group,
        logprobs=(score.logprob,),
        predicted=0 if score.greedy else -1,
        predicted_norm=None,
        gold=0,
        correct=score.greedy,
        correct_norm=None,
        gold_bpb=bits_per_byte(score.logprob, texts[0]),
        margin=None,
    )
