"""Suites: a TOML list of tasks with a macro average, and `evaluate`, the one call the runner makes.

A suite file holds `name`, `description`, an optional `[defaults]` table applied to every task,
`[[tasks]]` tables (`archaudit.evals.tasks.TaskSpec`) and an optional `[heldout]` table (a text
file scored for loss and bits per byte); one of the two at least. Built-in suites live beside
this file in `suites/`. Every file a suite reads is checked (its items loaded) before the model
loads, so a wrong path fails in a second, not after the load.

`downstream_avg` is the macro average of the tasks' scores, leaving out a task flagged
`at_chance` (its 95% interval reaches chance or the floor: it says nothing in this run; when
every task does, all are averaged and `downstream_tasks` is 0), with `downstream_avg_all` beside
it; `downstream_bpb` is the macro average of the tasks' gold
bits per byte (lower is better), continuous and far less noisy at small scale.
Benchmark paths are relative to the data root: `--data-root`, else `$ARCHAUDIT_DATA`, else
`../shared/data` relative to the current directory.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from archaudit.config import build, load_toml
from archaudit.data.tokenizers import Tokenizer
from archaudit.errors import ConfigError, DataError, did_you_mean
from archaudit.evals import (  # noqa: F401  (register task formats)
    loaders,
    longcontext,
    probes,
    retrieval,
)
from archaudit.evals.heldout import HeldoutLoss, heldout_loss
from archaudit.evals.models import load_scoring_model
from archaudit.evals.scoring import ScoringModel, encode_pairs
from archaudit.evals.tasks import (
    FORMATS,
    Item,
    LoadContext,
    TaskResult,
    TaskSpec,
    check_spec,
    load_items,
    score_task,
    task_requests,
)
from archaudit.files import atomic_write_text, check_output_file, file_signed
from archaudit.metrics import downstream_average

BUILTIN_DIR = Path(__file__).parent / "suites"
SUITE_KEYS = ("name", "description", "defaults", "tasks", "heldout")


@dataclass(frozen=True, kw_only=True)
class HeldoutSpec:
    path: str
    """UTF-8 text file, relative to the data root."""
    token_budget: int = 16384
    stride: int | None = None
    """Tokens predicted per window after the first; None = the window length (lm-eval's
    `loglikelihood_rolling`). Smaller strides give every prediction more context."""


@dataclass(frozen=True, kw_only=True)
class Suite:
    name: str
    description: str = ""
    tasks: tuple[TaskSpec, ...]
    heldout: HeldoutSpec | None = None


def builtin_suites() -> dict[str, Path]:
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}


def load_suite(suite: str | Path) -> Suite:
    """A built-in suite by name, or a suite TOML file by path."""
    builtins = builtin_suites()
    if str(suite) in builtins:
        path = builtins[str(suite)]
    elif Path(suite).is_file():
        path = Path(suite)
    else:
        raise ConfigError(
            f"unknown suite {str(suite)!r}: neither a built-in suite nor a file"
            f"{did_you_mean(str(suite), builtins)}"
        )
    return parse_suite(load_toml(path), where=str(path))


def parse_suite(tree: dict[str, Any], *, where: str) -> Suite:
    for key in tree:
        if key not in SUITE_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}{did_you_mean(key, SUITE_KEYS)}")
    defaults = tree.get("defaults", {})
    tables = tree.get("tasks", [])
    if not isinstance(defaults, dict):
        raise ConfigError(f"{where}: defaults = {defaults!r} must be a table ([defaults])")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"{where}: tasks = {tables!r} must be [[tasks]] tables")
    if not tables and not tree.get("heldout"):
        raise ConfigError(f"{where}: a suite needs at least one [[tasks]] table or a [heldout]")
    tasks = []
    for i, table in enumerate(tables):
        section = f"{where}: tasks[{i}]"
        spec = build(TaskSpec, {**defaults, **table}, section=section)
        check_spec(spec, where=f"{section} ({spec.name!r})")
        tasks.append(spec)
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(f"{where}: task names must be unique; repeated: {', '.join(dupes)}")
    heldout = tree.get("heldout")
    if heldout is not None and not isinstance(heldout, dict):
        raise ConfigError(f"{where}: heldout = {heldout!r} must be a table ([heldout])")
    return Suite(
        name=tree.get("name", Path(where).stem),
        description=tree.get("description", ""),
        tasks=tuple(tasks),
        heldout=build(HeldoutSpec, heldout, section=f"{where}: heldout") if heldout else None,
    )


def resolve_data_root(override: str | Path | None = None) -> Path:
    """`override`, else `$ARCHAUDIT_DATA`, else `../shared/data` from the current directory."""
    return Path(
        override or os.environ.get("ARCHAUDIT_DATA") or Path.cwd() / ".." / "shared" / "data"
    )


@dataclass(frozen=True, kw_only=True)
class SuiteResult:
    suite: str
    model: str
    tasks: dict[str, TaskResult]
    heldout: HeldoutLoss | None = None
    seconds: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)
    """How the suite was run (limit, data root, device), for the record."""

    @property
    def informative(self) -> dict[str, TaskResult]:
        """The tasks the macro average counts: those not flagged `at_chance`."""
        return {n: t for n, t in self.tasks.items() if not t.at_chance}

    @property
    def downstream_avg(self) -> float:
        """Macro average of each informative task's own metric: every task weighs the same.
        When every task sits at chance it averages them all (`downstream_tasks` = 0 says so), so
        a run's record stays complete; an audit's statistics then drop it
        (`stats.judging.signal`)."""
        tasks = self.informative or self.tasks
        return downstream_average({n: t.score for n, t in self.tasks.items()}, list(tasks))

    @property
    def downstream_bpb(self) -> float:
        """Macro average of the tasks' gold bits per byte (lower is better)."""
        return downstream_average({n: t.bpb for n, t in self.tasks.items()}, list(self.tasks))

    @property
    def metrics(self) -> dict[str, float]:
        """Flat numbers for the store: downstream_avg, task/acc, task/acc_low, task/acc_high, ..."""
        out: dict[str, float] = {}
        if self.tasks:
            out["downstream_avg"] = self.downstream_avg
            scores = {n: t.score for n, t in self.tasks.items()}
            out["downstream_avg_all"] = downstream_average(scores, list(self.tasks))
            out["downstream_tasks"] = float(len(self.informative))
            out["downstream_bpb"] = self.downstream_bpb
        for name, task in self.tasks.items():
            out[f"{name}/score"] = task.score
            out[f"{name}/at_chance"] = float(task.at_chance)
            out[f"{name}/chance"] = task.chance
            out[f"{name}/bpb"] = task.bpb
            if task.margin is not None:
                out[f"{name}/margin"] = task.margin
            for metric in ("acc", "acc_norm", "mc2"):
                value = getattr(task, metric)
                if value is not None:
                    out[f"{name}/{metric}"] = value.value
                    out[f"{name}/{metric}_low"] = value.low
                    out[f"{name}/{metric}_high"] = value.high
        if self.heldout:
            out |= {f"heldout/{k}": float(v) for k, v in self.heldout.to_dict().items()}
        return out

    def to_dict(self, *, include_items: bool = True) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "model": self.model,
            "seconds": self.seconds,
            "config": self.config,
            "metrics": self.metrics,
            "excluded": {n: t.score for n, t in self.tasks.items() if t.at_chance},
            "heldout": self.heldout.to_dict() if self.heldout else None,
            "tasks": {n: t.to_dict(include_items=include_items) for n, t in self.tasks.items()},
        }

    def to_json(self, *, include_items: bool = True) -> str:
        return json.dumps(self.to_dict(include_items=include_items), indent=1)


RESULT_SIGNATURE = b'{\n "suite": '
"""How `SuiteResult.to_json` begins: an earlier result that `eval --out` may replace."""


def evaluate(
    model_or_path: str | Path | ScoringModel | tuple[Any, Any],
    suite: str | Path | Suite,
    *,
    limit: int | None = None,
    out_path: str | Path | None = None,
    device: str = "cpu",
    batch_size: int = 32,
    data_root: str | Path | None = None,
    show_progress: bool = True,
) -> SuiteResult:
    """Score a model on a suite; `limit` overrides every task's item limit. With `out_path`,
    the full result (per-item outputs included, for paired tests) is written there as JSON."""
    start = time.perf_counter()
    if out_path is not None:  # before any work: a file this command did not write is refused
        check_output_file(Path(out_path), "--out", file_signed(RESULT_SIGNATURE, 16))
        if not Path(out_path).parent.is_dir():  # scoring everything first would be wasted
            raise DataError(
                f"--out {out_path}: its folder {Path(out_path).parent} does not exist; create "
                "it or give another path"
            )
    suite = suite if isinstance(suite, Suite) else load_suite(suite)  # check it before a load
    root = resolve_data_root(data_root)
    items = file_items(suite, root, limit)  # every data file checked before the model loads
    model = load_scoring_model(model_or_path, device=device)
    results = {}
    for spec in suite.tasks:
        if spec.name not in items:  # generated: its prompts are sized for the model
            context = LoadContext(data_root=root, limit=limit or spec.limit, model=model)
            items[spec.name] = load_items(spec, context)
        results[spec.name] = score_task(
            model, spec, items[spec.name], batch_size=batch_size, show_progress=show_progress
        )
    heldout = None
    if suite.heldout:
        heldout = heldout_loss(
            model,
            root / suite.heldout.path,
            token_budget=suite.heldout.token_budget,
            stride=suite.heldout.stride,
            show_progress=show_progress,
        )
    result = SuiteResult(
        suite=suite.name,
        model=model.name,
        tasks=results,
        heldout=heldout,
        seconds=time.perf_counter() - start,
        config={"limit": limit, "data_root": str(root), "device": device},
    )
    if out_path is not None:
        atomic_write_text(Path(out_path), result.to_json())
    return result


def file_items(suite: Suite, root: Path, limit: int | None = None) -> dict[str, list[Item]]:
    """The items of every task read from files (no model needed), and the held-out file
    checked: a wrong path or a malformed row fails before any model loads."""
    items = {
        spec.name: load_items(
            spec, LoadContext(data_root=root, limit=limit or spec.limit, model=None)
        )
        for spec in suite.tasks
        if not FORMATS.get(spec.format).generated
    }
    if suite.heldout and not (root / suite.heldout.path).is_file():
        raise DataError(
            f"held-out text {root / suite.heldout.path} not found (heldout.path = "
            f"{suite.heldout.path!r}, data root {root}); set ARCHAUDIT_DATA or --data-root"
        )
    return items


# ---------------------------------------------------------------------------------------------
# checking a suite before a model exists


class TokenizerOnly:
    """A model not yet trained, as far as loading and encoding items goes: its tokenizer and
    context length. Nothing can be scored with it."""

    tree_attention = False
    position_limit: int | None = None
    device = torch.device("cpu")

    def __init__(self, tokenizer: Tokenizer, context_length: int) -> None:
        self.tokenizer = tokenizer
        self.name = f"{getattr(tokenizer, 'spec', 'tokenizer')} at {context_length} tokens"
        self.context_length = self.max_length = context_length
        self.vocab_size = tokenizer.vocab_size
        self.prefix_token_id = tokenizer.eos_id  # as `ArchauditLM`

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids))

    def logits_at(self, *args: object, **kwargs: object) -> torch.Tensor:
        raise TypeError("TokenizerOnly cannot score: it stands for a model not yet trained")


def longest_continuations(
    suite: Suite,
    model: ScoringModel,
    *,
    limit: int | None = None,
    data_root: str | Path | None = None,
) -> dict[str, int]:
    """Each task's longest continuation in the model's tokens: its items are loaded (as
    `evaluate` would, same limit and data root) and encoded, nothing is scored."""
    root = resolve_data_root(data_root)
    longest = {}
    for spec in suite.tasks:
        items = load_items(
            spec, LoadContext(data_root=root, limit=limit or spec.limit, model=model)
        )
        pairs = encode_pairs(model, task_requests(spec, items))
        longest[spec.name] = max(len(continuation) for _, continuation in pairs)
    return longest
