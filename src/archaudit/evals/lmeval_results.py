"""lm-evaluation-harness output → the results.csv and items.csv that `archaudit stats` reads.

lm-eval writes, per run, `results_<time>.json` (metrics per task, the config with model args
and seeds) and, with `--log_samples`, `samples_<task>_<time>.jsonl` (one line per item with
its per-item metric). Each results file is one run; its arm, seed and scale are read by named
label sources (`--arm-from dir`, `--seed-from seed`, `regex:...`), so runs evaluated anywhere
can be judged and compared item by item here. Needs neither torch nor lm-eval.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archaudit.errors import ConfigError, DataError, did_you_mean
from archaudit.files import atomic_write_text
from archaudit.metrics import downstream_average
from archaudit.registry import Registry
from archaudit.stats.frames import parquet_twin
from archaudit.stats.items import ITEM_COLUMNS, ITEMS_FILE, load_items
from archaudit.stats.table import REQUIRED_COLUMNS, RESULTS_FILE, load_table


@dataclass(frozen=True)
class HarnessRun:
    """One lm-eval results file and what it says."""

    path: Path
    document: dict[str, Any]

    @property
    def folder(self) -> Path:
        """lm-eval's --output_path of this run: the results file's folder, or the one above it
        when that is lm-eval's per-model subfolder (`<output_path>/<model>/results_*.json`)."""
        sanitized = self.document.get("model_name_sanitized")
        parent = self.path.parent
        return parent.parent if sanitized and parent.name == sanitized else parent

    def samples_file(self, task: str) -> Path | None:
        stamp = self.path.stem.removeprefix("results_")
        candidate = self.path.with_name(f"samples_{task}_{stamp}.jsonl")
        return candidate if candidate.is_file() else None


LABELS: Registry[Callable[[HarnessRun], str]] = Registry("label source")


@LABELS.register("dir")
def _dir(run: HarnessRun) -> str:
    """The name of the run's output folder (lm-eval's --output_path)."""
    return run.folder.name


@LABELS.register("parent")
def _parent(run: HarnessRun) -> str:
    """The name of the folder above the output folder (`baseline/seed-0` → baseline)."""
    return run.folder.parent.name


@LABELS.register("model")
def _model(run: HarnessRun) -> str:
    """The model lm-eval loaded: the last part of `pretrained` (or of `path`; of the model's
    name when a Python caller passed a model object)."""
    config = run.document.get("config", {})
    args = config.get("model_args") or {}
    if isinstance(args, str):
        args = dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    name = (
        args.get("pretrained")
        or args.get("path")
        or run.document.get("model_name")
        or config.get("model")
        or ""
    )
    return Path(str(name)).name


@LABELS.register("seed")
def _seed(run: HarnessRun) -> str:
    """lm-eval's `--seed` (its few-shot seed, which decides the few-shot examples)."""
    config = run.document.get("config", {})
    return str(config.get("fewshot_seed", config.get("random_seed", "")))


@LABELS.register("fewshot")
def _fewshot(run: HarnessRun) -> str:
    shots = sorted({str(n) for n in run.document.get("n-shot", {}).values()})
    return "+".join(shots) + "-shot"


@LABELS.register("params")
def _params(run: HarnessRun) -> str:
    """The model's parameter count as lm-eval reports it, e.g. 135M."""
    n = run.document.get("config", {}).get("model_num_parameters")
    if not n:
        return "default"
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def label(run: HarnessRun, source: str, option: str) -> str:
    """The value `source` (a registered name or `regex:PATTERN`) reads from `run`."""
    if source.startswith("regex:"):
        match = re.search(source.removeprefix("regex:"), str(run.path))
        if match is None or not match.groups():
            raise ConfigError(
                f"{option} {source!r}: the pattern (with one group) does not match {run.path}"
            )
        return match[1]
    if source not in LABELS:
        raise ConfigError(
            f"{option} {source!r} is not a label source{did_you_mean(source, LABELS)}; or "
            "give regex:PATTERN with one group"
        )
    return LABELS.get(source)(run)


@dataclass(frozen=True)
class ImportedRun:
    path: str
    arm: str
    scale: str
    seed: int
    tasks: tuple[str, ...]
    items: int
    """Per-item rows from `--log_samples` files (0 without them)."""


@dataclass(frozen=True)
class ImportResult:
    results: str
    items: str | None
    """None when no run had samples: verdicts work, paired item tests need `--log_samples`."""
    runs: tuple[ImportedRun, ...]


def find_runs(roots: Sequence[str | Path]) -> list[HarnessRun]:
    """Every `results_*.json` under each RESULTS_DIR, in path order."""
    runs = []
    for root in map(Path, roots):
        files = [root] if root.is_file() else sorted(root.rglob("results_*.json"))
        if not files:
            raise DataError(
                f"{root}: no lm-eval results_*.json found; pass the --output_path of an lm-eval "
                "run (the folder it wrote, or one above it)"
            )
        for path in files:
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
                raise DataError(f"{path}: not a readable lm-eval results file ({err})") from None
            if not isinstance(document, dict) or "results" not in document:
                raise DataError(f"{path}: no 'results' table; is it an lm-eval results file?")
            runs.append(HarnessRun(path, document))
    return runs


def main_metric(run: HarnessRun, task: str) -> str | None:
    """The task's first declared metric (its YAML's metric_list), as lm-eval reports it."""
    declared = run.document.get("configs", {}).get(task, {}).get("metric_list") or []
    names = [m["metric"] for m in declared if isinstance(m, dict) and "metric" in m]
    reported = metric_values(run.document["results"].get(task, {}))
    return next((n for n in names if n in reported), next(iter(reported), None))


def metric_values(row: dict[str, Any]) -> dict[str, float]:
    """`{"acc,none": 0.6, "acc_stderr,none": ...}` → {"acc": 0.6}; other filters keep theirs
    (`exact_match.strict-match`), standard errors and non-numbers are left out."""
    out = {}
    for key, value in row.items():
        metric, _, kind = key.partition(",")
        if not kind or "_stderr" in metric or not isinstance(value, int | float):
            continue
        out[metric if kind == "none" else f"{metric}.{kind}"] = float(value)
    return out


def metric_rows(run: HarnessRun) -> Iterator[tuple[str, float]]:
    """(metric, value): each task's metrics, its `score` (main metric) and downstream_avg."""
    scores: dict[str, float] = {}
    for task, row in sorted(run.document["results"].items()):
        values = metric_values(row)
        main = main_metric(run, task)
        if main is None:
            continue
        for metric, value in sorted(values.items()):
            yield f"{task}/{metric}", value
        yield f"{task}/score", values[main]
        scores[task] = values[main]
    if scores:  # lm-eval flags no task at chance: the audit's statistics leave those out
        yield "downstream_avg", downstream_average(scores, list(scores))


def item_rows(run: HarnessRun) -> Iterator[tuple[str, str, int]]:
    """(task, item, correct) from the samples files, for tasks whose main metric is 0/1."""
    for task in sorted(run.document["results"]):
        main, samples = main_metric(run, task), run.samples_file(task)
        if main is None or samples is None:
            continue
        for n, line in enumerate(samples.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            sample = json.loads(line)
            value = sample.get(main.partition(".")[0])
            if value not in (0, 1, 0.0, 1.0, True, False):
                if n == 1:
                    break  # not a per-item 0/1 metric: no paired test for this task
                raise DataError(f"{samples}:{n}: {main} = {value!r} is not 0 or 1")
            yield task, str(sample["doc_id"]), int(value)


def import_lmeval(
    roots: Sequence[str | Path],
    out: str | Path,
    *,
    arm_from: str = "dir",
    seed_from: str = "seed",
    scale_from: str = "params",
) -> ImportResult:
    """Turn lm-eval runs under `roots` into `out/results.csv` and `out/items.csv` (and their
    Parquet twins with the `frames` extra), checked by the loaders `archaudit stats` uses."""
    out = Path(out)
    results, items, imported = [], [], []
    seen: dict[tuple[str, str, int], Path] = {}
    for run in find_runs(roots):
        arm, scale = label(run, arm_from, "--arm-from"), label(run, scale_from, "--scale-from")
        seed = _seed_number(label(run, seed_from, "--seed-from"), seed_from, run.path)
        key = (arm, scale, seed)
        if key in seen:
            raise ConfigError(
                f"{run.path} and {seen[key]} are both arm={arm!r} scale={scale!r} seed={seed}; "
                "tell them apart with --arm-from/--seed-from (e.g. regex:seed-(\\d+))"
            )
        seen[key] = run.path
        results += [(arm, scale, seed, m, repr(v)) for m, v in metric_rows(run)]
        answers = [(arm, scale, seed, *row) for row in item_rows(run)]
        items += answers
        tasks = tuple(sorted(run.document["results"]))
        imported.append(ImportedRun(str(run.path), arm, scale, seed, tasks, len(answers)))
    out.mkdir(parents=True, exist_ok=True)
    results_path, items_path = out / RESULTS_FILE, out / ITEMS_FILE
    atomic_write_text(results_path, _csv(REQUIRED_COLUMNS, results))
    load_table(results_path)  # the checks `archaudit stats` applies, now
    parquet_twin(results_path, load_table)
    if items:
        atomic_write_text(items_path, _csv(ITEM_COLUMNS, items))
        load_items(items_path)
        parquet_twin(items_path, load_items)
    else:  # an items table from an earlier import would no longer match the results
        items_path.unlink(missing_ok=True)
        items_path.with_suffix(".parquet").unlink(missing_ok=True)
    return ImportResult(str(results_path), str(items_path) if items else None, tuple(imported))


def _seed_number(text: str, source: str, path: Path) -> int:
    if not re.fullmatch(r"-?\d+", text):
        raise ConfigError(
            f"--seed-from {source!r} gives {text!r} for {path}, not an integer seed; use "
            "--seed-from regex:PATTERN with one group of digits"
        )
    return int(text)


def _csv(columns: Sequence[str], rows: Sequence[tuple]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buffer.getvalue()
