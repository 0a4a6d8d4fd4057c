"""lm-evaluation-harness output → the results.csv and items.csv that `archaudit stats` reads.

lm-eval writes, per run, `results_<time>.json` (metrics per task, the config with model args
and seeds) and, with `--log_samples`, `samples_<task>_<time>.jsonl` (one line per item with
its per-item metric). Each results file is one run; its arm, seed and scale are read by named
label sources (`--arm-from dir`, `--seed-from seed`, `regex:...`), so runs evaluated anywhere
can be judged and compared item by item here. Needs neither torch nor lm-eval.

The defaults cannot split a scale or collide seeds: `--scale-from auto` puts runs whose
parameter counts are within `SCALE_SPAN` of each other on one scale (an arm that adds a few
parameters, as qk_norm does, stays beside its baseline), and `--seed-from auto` reads a
`seed-N` folder on the path, else numbers each arm's runs in path order (lm-eval's own seed is
its few-shot seed, the same for every checkpoint in most setups). What they chose is reported.
Every field read is checked: a torn samples line, a `results` that is not a table, a metric
that is not a finite number or a task name that is not a plain name is one line naming the file.
The output folder is written whole or not at all (`files.publish_folder`, marker `import.json`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from archaudit.errors import ConfigError, DataError, did_you_mean
from archaudit.files import (
    atomic_write_text,
    check_output_folder,
    parse_json,
    publish_folder,
    read_regular_bytes,
)
from archaudit.metrics import downstream_average
from archaudit.registry import Registry
from archaudit.stats.inference.items import ITEM_COLUMNS, ITEMS_FILE, load_items
from archaudit.stats.records.csvio import csv_text
from archaudit.stats.records.frames import parquet_twin
from archaudit.stats.records.table import REQUIRED_COLUMNS, RESULTS_FILE, load_table

IMPORT_RECORD = "import.json"
"""Written last into the output folder: the runs, the labels chosen and the files written."""
SCALE_SPAN = 1.5
"""`--scale-from auto`: parameter counts within this factor of a scale's smallest share it."""
TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+\-]*")


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

    def table(self, *keys: str) -> dict[str, Any]:
        """The JSON object at `keys` (an empty one when absent), else a one-line refusal."""
        node: Any = self.document
        for key in keys:
            node = node.get(key, {}) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            where = ".".join(keys)
            raise DataError(f"{self.path}: {where!r} is {type(node).__name__}, not a table")
        return node

    @property
    def tasks(self) -> list[str]:
        """The task names of `results`, each a plain name (it becomes part of a file name)."""
        names = sorted(self.table("results"))
        for name in names:
            if not TASK_NAME.fullmatch(name) or ".." in name:
                raise DataError(f"{self.path}: task name {name!r} is not a plain task name")
        return names

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
    return Path(model_name(run)).name


def model_args(run: HarnessRun) -> dict[str, Any]:
    """config.model_args as a table (lm-eval writes `pretrained=x,dtype=y` or an object)."""
    args = run.table("config").get("model_args") or {}
    if isinstance(args, str):
        args = dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    if not isinstance(args, dict):
        raise DataError(f"{run.path}: config.model_args is {type(args).__name__}")
    return args


def model_name(run: HarnessRun) -> str:
    """`pretrained` (or `path`) of model_args, else lm-eval's model_name, else config.model."""
    args = model_args(run)
    name = (
        args.get("pretrained")
        or args.get("path")
        or run.document.get("model_name")
        or run.table("config").get("model")
        or ""
    )
    return str(name)


def model_identity(run: HarnessRun) -> tuple[str, str]:
    """(the model's name, its other model_args as `,key=value...`): runs of one model share it,
    two revisions or dtypes of one checkpoint do not."""
    args = model_args(run)
    rest = "".join(f",{k}={args[k]}" for k in sorted(args) if k not in ("pretrained", "path"))
    return model_name(run), rest


@LABELS.register("seed")
def _seed(run: HarnessRun) -> str:
    """lm-eval's `--seed` (its few-shot seed, which decides the few-shot examples)."""
    config = run.table("config")
    return str(config.get("fewshot_seed", config.get("random_seed", "")))


@LABELS.register("fewshot")
def _fewshot(run: HarnessRun) -> str:
    shots = sorted({str(n) for n in run.table("n-shot").values()})
    return "+".join(shots) + "-shot"


@LABELS.register("params")
def _params(run: HarnessRun) -> str:
    """The model's parameter count as lm-eval reports it, e.g. 135M."""
    n = parameter_count(run)
    return "default" if n is None else size_label(n)


def parameter_count(run: HarnessRun) -> float | None:
    """config.model_num_parameters: a positive number, or a size such as "135M"; None when
    absent."""
    n = run.table("config").get("model_num_parameters")
    if n in (None, 0, ""):
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMB]?)", n.strip()) if isinstance(n, str) else None
    if match:
        return float(match[1]) * {"": 1, "K": 1e3, "M": 1e6, "B": 1e9}[match[2]]
    if isinstance(n, bool) or not isinstance(n, int | float) or not 0 < n < 1e16:
        raise DataError(
            f"{run.path}: config.model_num_parameters = {str(n)[:40]!r} is not a parameter count"
        )
    return float(n)


def size_label(n: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:.0f}"


def label(run: HarnessRun, source: str, option: str) -> str:
    """The value `source` (a registered name or `regex:PATTERN`) reads from `run`."""
    if source.startswith("regex:"):
        try:
            match = re.search(source.removeprefix("regex:"), str(run.path))
        except re.error as err:
            raise ConfigError(f"{option} {source!r}: not a regular expression ({err})") from None
        if match is None or not match.groups() or match[1] is None:
            raise ConfigError(
                f"{option} {source!r}: the pattern (with one group) does not match {run.path}"
            )
        return match[1]
    if source not in LABELS:
        raise ConfigError(
            f"{option} {source!r} is not a label source{did_you_mean(source, [*LABELS, AUTO])}; "
            "or give regex:PATTERN with one group"
        )
    return LABELS.get(source)(run)


AUTO = "auto"
SEED_FOLDER = re.compile(r"seed[-_=]?(\d+)", re.IGNORECASE)


def auto_scales(runs: Sequence[HarnessRun]) -> tuple[list[str], str]:
    """One scale per group of parameter counts within `SCALE_SPAN` of the group's smallest,
    named by that smallest count; and the sentence that says so."""
    counts = [parameter_count(run) for run in runs]
    groups: list[float] = []
    for n in sorted({c for c in counts if c is not None}):
        if not groups or n > groups[-1] * SCALE_SPAN:
            groups.append(n)
    names = [
        "default" if n is None else size_label(max(g for g in groups if g <= n)) for n in counts
    ]
    return names, (
        f"scale: from lm-eval's parameter count, counts within {SCALE_SPAN}x share one scale "
        f"({', '.join(sorted(set(names)))}); --scale-from names another source"
    )


def auto_seeds(
    runs: Sequence[HarnessRun], groups: Sequence[tuple[str, str]]
) -> tuple[list[str], str]:
    """Seeds from a `seed-N` folder on every run's path, else each (arm, scale)'s runs
    numbered 0, 1, ... in path order; and the sentence that says which."""
    found = [
        next((m[1] for p in reversed(r.path.parts) if (m := SEED_FOLDER.fullmatch(p))), None)
        for r in runs
    ]
    if all(seed is not None for seed in found):
        return [str(seed) for seed in found], "seed: from the seed-N folder of each run's path"
    order: dict[tuple[str, str], int] = {}
    seeds = []
    for group in groups:
        seeds.append(str(order.setdefault(group, 0)))
        order[group] += 1
    return seeds, (
        "seed: no seed-N folder on every path, so each arm's runs are numbered 0, 1, ... in path "
        "order (lm-eval's --seed is its few-shot seed); --seed-from names another source"
    )


def auto_arms(runs: Sequence[HarnessRun]) -> tuple[list[str], str]:
    """Each run's output folder names its arm (`dir`), unless a folder holds runs of several
    models (lm-eval's habit: one --output_path, a subfolder per model), which `dir` would merge
    into one arm: then every run is named by its model (`model_arm`), in every folder, so that
    one model's seeds stay one arm wherever they lie (named by model in the mixed folder and by
    folder elsewhere, its two seeds became two one-seed arms); and the sentence that says
    which."""
    models: dict[Path, set[tuple[str, str]]] = {}
    for run in runs:
        models.setdefault(run.folder, set()).add(model_identity(run))
    shared = sorted(str(folder) for folder, found in models.items() if len(found) > 1)
    if not shared:
        return [run.folder.name for run in runs], (
            "arm: the name of each run's output folder (one model in each)"
        )
    every = {identity for found in models.values() for identity in found}
    mixed = len({identity for f, found in models.items() if len(found) > 1 for identity in found})
    arms = [model_arm(model_identity(run), every) for run in runs]
    unnamed = sorted({str(run.path) for run in runs if _empty_pretrained(run)})
    empty = (
        f"; {', '.join(unnamed)} name no model (an empty pretrained=): named by lm-eval's "
        "model_name or model type"
        if unnamed
        else ""
    )
    return arms, (
        f"arm: {', '.join(shared)} holds runs of {mixed} models (model_args), so every run is "
        f"named by its model: {', '.join(sorted(set(arms)))}{empty}; --arm-from names another "
        "source"
    )


def _empty_pretrained(run: HarnessRun) -> bool:
    args = model_args(run)
    return not args.get("pretrained") and not args.get("path")


def model_arm(identity: tuple[str, str], others: set[tuple[str, str]]) -> str:
    """The first of a model's `arm_names` that no other model (`others`) shares."""
    names = arm_names(identity)
    for i, name in enumerate(names):
        if [arm_names(other)[i] for other in others].count(name) == 1:
            return name or "model"
    return names[-1] or "model"


def arm_names(identity: tuple[str, str]) -> tuple[str, str, str]:
    """A model's arm names, shortest first: the last part of its name; that with its other
    model_args; its whole name and args (`/` as lm-eval's `__`)."""
    name, rest = identity
    return Path(name).name, Path(name).name + rest, (name + rest).replace("/", "__")


def labels(runs: Sequence[HarnessRun], source: str, option: str) -> list[str]:
    return [label(run, source, option) for run in runs]


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
    choices: tuple[str, ...] = ()
    """What `auto` label sources chose, one sentence each."""


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
                document = parse_json(read_regular_bytes(path), path)  # no FIFO wait
            except (OSError, DataError) as err:
                line = str(err).splitlines()[0] if str(err) else type(err).__name__
                line = line.removeprefix(f"{path} ")
                raise DataError(f"{path}: not a readable lm-eval results file ({line})") from None
            if not isinstance(document, dict) or "results" not in document:
                raise DataError(f"{path}: no 'results' table; is it an lm-eval results file?")
            run = HarnessRun(path, document)
            for task in run.tasks:
                run.table("results", task)
            runs.append(run)
    return runs


def main_metric(run: HarnessRun, task: str) -> str | None:
    """The task's first declared metric (its YAML's metric_list), as lm-eval reports it; else
    its first reported number. A declared metric reported as something else is refused, never
    replaced by the next one."""
    declared = run.table("configs", task).get("metric_list") or []
    names = [
        m["metric"] for m in declared if isinstance(m, dict) and isinstance(m.get("metric"), str)
    ]
    reported = metric_values(run, task)
    row = run.table("results", task)
    for name in names:
        if name in reported:
            return name
        if any(key.partition(",")[0] == name for key in row):
            raise DataError(
                f"{run.path}: {task}'s main metric {name!r} is not a number "
                f"({next(v for k, v in row.items() if k.partition(',')[0] == name)!r:.40})"
            )
    return next(iter(reported), None)


def metric_values(run: HarnessRun, task: str) -> dict[str, float]:
    """`{"acc,none": 0.6, "acc_stderr,none": ...}` → {"acc": 0.6}; other filters keep theirs
    (`exact_match.strict-match`), standard errors and non-numbers are left out; a number that
    is not finite is refused."""
    out = {}
    for key, value in run.table("results", task).items():
        metric, _, kind = key.partition(",")
        if not kind or "_stderr" in metric or isinstance(value, bool):
            continue
        if not isinstance(value, int | float):
            continue
        number = float(value) if abs(value) < 1e300 else math.inf
        if not math.isfinite(number):
            raise DataError(f"{run.path}: {task} {key} = {str(value)[:40]} is not a finite number")
        out[metric if kind == "none" else f"{metric}.{kind}"] = number
    return out


def metric_rows(run: HarnessRun) -> Iterator[tuple[str, float]]:
    """(metric, value): each task's metrics, its `score` (main metric) and downstream_avg."""
    scores: dict[str, float] = {}
    for task in run.tasks:
        values = metric_values(run, task)
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
    for task in run.tasks:
        main, samples = main_metric(run, task), run.samples_file(task)
        if main is None or samples is None:
            continue
        for n, sample in _samples(samples):
            value = sample.get(main.partition(".")[0])
            if value not in (0, 1, 0.0, 1.0, True, False) or isinstance(value, str):
                if n == 1:
                    break  # not a per-item 0/1 metric: no paired test for this task
                raise DataError(f"{samples}:{n}: {main} = {value!r:.40} is not 0 or 1")
            doc = sample.get("doc_id")
            if isinstance(doc, bool) or not isinstance(doc, int | str):
                raise DataError(f"{samples}:{n}: doc_id = {doc!r:.40} is not an item id")
            yield task, str(doc), int(value)


def _samples(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, sample) of a samples JSONL file; a torn or non-object line is refused."""
    try:
        lines = read_regular_bytes(path).decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except (ValueError, RecursionError):
            raise DataError(f"{path}:{n}: not a JSON line (torn or edited)") from None
        if not isinstance(sample, dict):
            raise DataError(f"{path}:{n}: {type(sample).__name__} where a sample object belongs")
        yield n, sample


@dataclass(frozen=True)
class _Labelled:
    run: HarnessRun
    arm: str
    scale: str
    seed: int


def label_runs(
    runs: Sequence[HarnessRun], arm_from: str, seed_from: str, scale_from: str
) -> tuple[list[_Labelled], tuple[str, ...]]:
    """Each run's arm, scale and seed; the sentences that say what `auto` chose."""
    notes = []
    if arm_from == AUTO:
        arms, note = auto_arms(runs)
        notes.append(note)
    else:
        arms = labels(runs, arm_from, "--arm-from")
    if scale_from == AUTO:
        scales, note = auto_scales(runs)
        notes.append(note)
    else:
        scales = labels(runs, scale_from, "--scale-from")
    if seed_from == AUTO:
        seeds, note = auto_seeds(runs, list(zip(arms, scales, strict=True)))
        notes.append(note)
    else:
        seeds = labels(runs, seed_from, "--seed-from")
    out: list[_Labelled] = []
    seen: dict[tuple[str, str, int], Path] = {}
    for run, arm, scale, text in zip(runs, arms, scales, seeds, strict=True):
        seed = _seed_number(text, seed_from, run.path)
        key = (arm, scale, seed)
        if key in seen:
            raise ConfigError(
                f"{run.path} and {seen[key]} are both arm={arm!r} scale={scale!r} seed={seed}; "
                "tell them apart with --arm-from/--seed-from (e.g. regex:seed-(\\d+))"
            )
        seen[key] = run.path
        out.append(_Labelled(run, arm, scale, seed))
    return out, tuple(notes)


def import_lmeval(
    roots: Sequence[str | Path],
    out: str | Path,
    *,
    arm_from: str = AUTO,
    seed_from: str = AUTO,
    scale_from: str = AUTO,
) -> ImportResult:
    """Turn lm-eval runs under `roots` into `out/results.csv` and `out/items.csv` (and their
    Parquet twins with the `frames` extra), checked by the loaders `archaudit stats` uses
    before the folder is renamed into place."""
    out = Path(out)
    check_output_folder(out, "--out", IMPORT_RECORD)  # before the work; publishing checks again
    labelled, notes = label_runs(find_runs(roots), arm_from, seed_from, scale_from)
    results, items, imported = [], [], []
    for r in labelled:
        results += [(r.arm, r.scale, r.seed, m, repr(v)) for m, v in metric_rows(r.run)]
        answers = [(r.arm, r.scale, r.seed, *row) for row in item_rows(r.run)]
        items += answers
        imported.append(
            ImportedRun(str(r.run.path), r.arm, r.scale, r.seed, tuple(r.run.tasks), len(answers))
        )
    result = ImportResult(
        str(out / RESULTS_FILE), str(out / ITEMS_FILE) if items else None, tuple(imported), notes
    )
    publish_folder(out, lambda tmp: _write(tmp, results, items, result), flag="--out",
                   marker=IMPORT_RECORD)  # fmt: skip
    return result


def _write(folder: Path, results: list[tuple], items: list[tuple], result: ImportResult) -> None:
    """The tables into `folder`, each read back by the loader `archaudit stats` uses."""
    results_path, items_path = folder / RESULTS_FILE, folder / ITEMS_FILE
    atomic_write_text(results_path, csv_text(REQUIRED_COLUMNS, results))
    load_table(results_path)
    parquet_twin(results_path, load_table)
    if items:
        atomic_write_text(items_path, csv_text(ITEM_COLUMNS, items))
        load_items(items_path)
        parquet_twin(items_path, load_items)
    files = sorted([p.name for p in folder.iterdir()] + [IMPORT_RECORD])
    record = {
        "files": files,
        "choices": list(result.choices),
        "runs": [asdict(r) for r in result.runs],
    }
    atomic_write_text(folder / IMPORT_RECORD, json.dumps(record, indent=1, sort_keys=True) + "\n")


def _seed_number(text: str, source: str, path: Path) -> int:
    if not re.fullmatch(r"-?\d{1,18}", text):
        raise ConfigError(
            f"--seed-from {source!r} gives {text[:40]!r} for {path}, not an integer seed; use "
            "--seed-from regex:PATTERN with one group of digits"
        )
    return int(text)
