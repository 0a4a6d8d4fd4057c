"""Scoring speed on held-out items (issue 57, must-show 3): an archaudit run scored by archaudit,
its `export hf` copy scored by archaudit, and the copy scored by lm-evaluation-harness's `hf`
model (and, as `export-before`, the copy scored without the shared KV cache: the path before
issue 57), on PIQA (the ybisk release) and TruthfulQA MC1 (mc_task.json) items that neither the
suite's tests nor the `published` suite's own limits read: PIQA from item `--piqa-from`
(tests: the first 120, suite: 200), TruthfulQA from question `--tqa-from` (tests: 50, suite:
100). Prompts are lm-eval's own task YAMLs (`piqa/piqa.yaml`, `truthfulqa/truthfulqa_mc1.yaml`)
over local copies of the held-out slice; ours reads the same slice through the `published`
suite. Each side's time covers building the requests, tokenising and scoring (models are
loaded before); CPU seconds (user + system of this process) are the comparison on a shared
machine, wall seconds are recorded beside them. Two rounds, the order of the sides reversed in
the second; the ratio is lm-eval's CPU over the side's, per round and over both. Predictions
(each item's argmax choice) must be identical. Needs the `hf` and `lmeval` extras and
../shared/data; writes benchmarks/eval_speed-held-out.json.

    nice -n 10 python benchmarks/eval_speed.py --held-out --run RUN [--limit 40]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from archaudit.evals import evaluate, load_scoring_model, load_suite
from archaudit.evals.lmeval_adapter import run_local_task
from archaudit.evals.scoring import ScoringModel
from archaudit.evals.suites import Suite

TASKS = {
    "piqa": ("piqa/piqa.yaml", "piqa"),
    "truthfulqa_mc1": ("truthfulqa/truthfulqa_mc1.yaml", "tqa"),
}
"""Our task name → (lm-eval's YAML it includes, the local task's stem)."""


@dataclass(frozen=True)
class Timed:
    wall_s: float
    cpu_s: float
    predicted: tuple[int, ...]
    logprobs: tuple[tuple[float, ...], ...]


def _timed(run: Callable[[], list[list[float]]]) -> Timed:
    wall, cpu = time.perf_counter(), time.process_time()
    logprobs = run()
    predicted = tuple(max(range(len(lp)), key=lp.__getitem__) for lp in logprobs)
    return Timed(time.perf_counter() - wall, time.process_time() - cpu, predicted,
                 tuple(tuple(lp) for lp in logprobs))  # fmt: skip


def held_out_data(data: Path, root: Path, args: argparse.Namespace) -> Path:
    """The held-out slices under `root`: as the `published` suite reads them (a data root of
    their own) and as lm-eval's YAMLs read them (`root/lm-eval/*.jsonl`); returns the lm-eval
    task folder."""
    piqa = data / "benchmarks/piqa_ybisk"
    lines = (piqa / "valid.jsonl").read_text().splitlines()[args.piqa_from :][: args.limit]
    labels = (piqa / "valid-labels.lst").read_text().split()[args.piqa_from :][: args.limit]
    ours = root / "data" / "benchmarks"
    (ours / "piqa_ybisk").mkdir(parents=True)
    (ours / "piqa_ybisk/valid.jsonl").write_text("".join(line + "\n" for line in lines))
    (ours / "piqa_ybisk/valid-labels.lst").write_text("".join(x + "\n" for x in labels))
    questions = json.loads((data / "benchmarks/truthfulqa/mc_task.json").read_text())
    questions = questions[args.tqa_from :][: args.limit]
    (ours / "truthfulqa").mkdir()
    (ours / "truthfulqa/mc_task.json").write_text(json.dumps(questions))
    tasks = root / "lm-eval"
    tasks.mkdir()
    docs = [json.loads(line) | {"label": int(x)} for line, x in zip(lines, labels, strict=True)]
    _jsonl(tasks / "piqa.jsonl", docs)
    _jsonl(tasks / "tqa.jsonl", [
        {"question": q["question"]}
        | {k: {"choices": list(q[k]), "labels": list(q[k].values())}
           for k in ("mc1_targets", "mc2_targets")}
        for q in questions
    ])  # fmt: skip
    import lm_eval

    installed = Path(lm_eval.__file__).parent / "tasks"
    for include, stem in TASKS.values():
        (tasks / f"{stem}_held_out.yaml").write_text(
            f"include: {installed / include}\ntask: {stem}_held_out\ntag: []\n"
            f"dataset_path: json\ndataset_name: null\ndataset_kwargs:\n  data_files:\n"
            f"    validation: {tasks / stem}.jsonl\nvalidation_split: validation\n"
            "training_split: null\ntest_split: null\n"
        )
    return tasks


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _ours(model: ScoringModel, task: str, root: Path, args: argparse.Namespace) -> Callable:
    spec = next(t for t in load_suite("published").tasks if t.name == task)
    suite = Suite(name="held-out", tasks=(replace(spec, limit=args.limit),))

    def run() -> list[list[float]]:
        result = evaluate(model, suite, batch_size=args.batch_size, data_root=root / "data",
                          show_progress=False)  # fmt: skip
        return [list(i.logprobs) for i in result.tasks[task].items]

    return run


def _without_cache(model: ScoringModel, run: Callable) -> Callable:
    """`run` with the model offering no shared context: the path before issue 57 for an HF
    model (its inputs in full, choices sharing a prefix in a tree row)."""

    def before() -> list[list[float]]:
        model.context_cache = lambda: None  # type: ignore[attr-defined]
        try:
            return run()
        finally:
            del model.context_cache  # type: ignore[attr-defined]

    return before


def _lm_eval(harness: Any, task: str, folder: Path, args: argparse.Namespace) -> Callable:
    name = f"{TASKS[task][1]}_held_out"

    def run() -> list[list[float]]:
        result = run_local_task(harness, name, folder, limit=args.limit)
        samples = sorted(result["samples"][name], key=lambda s: s["doc_id"])
        return [[float(r[0]) for r in s["filtered_resps"]] for s in samples]

    return run


def bench_held_out(args: argparse.Namespace, data: Path, load_avg: Callable) -> dict:
    from lm_eval.models.huggingface import HFLM

    from archaudit.export.hf import export_hf

    root = Path(tempfile.mkdtemp())
    folder = held_out_data(data, root, args)
    export_hf(args.run, root / "hf")
    run_model = load_scoring_model(args.run)
    export_model = load_scoring_model(root / "hf")
    harness = HFLM(pretrained=str(root / "hf"), batch_size=args.batch_size, device="cpu")
    start = load_avg()
    tasks = []
    for task in args.held_out_tasks.split(","):
        sides = {
            "run": _ours(run_model, task, root, args),
            "export": _ours(export_model, task, root, args),
            "export-before": _without_cache(export_model, _ours(export_model, task, root, args)),
            "lm-eval": _lm_eval(harness, task, folder, args),
        }
        chosen = {name: sides[name] for name in (*args.sides.split(","), "lm-eval")}
        tasks.append(_rounds(task, chosen))
    return {
        "model": f"{args.run.name}: the run (archaudit), its HF export (archaudit, lm-eval hf)",
        "threads": args.threads,
        "batch_size": args.batch_size,
        "items": args.limit,
        "held_out": {"piqa_from": args.piqa_from, "truthfulqa_from": args.tqa_from},
        "load_average": {"start": start, "end": load_avg()},
        "tasks": tasks,
    }


def _rounds(task: str, sides: dict[str, Callable]) -> dict:
    """Two rounds, the second in reverse order; per side its seconds in each round."""
    rounds: list[dict[str, Timed]] = []
    for order in (list(sides), list(reversed(sides))):
        rounds.append({name: _timed(sides[name]) for name in order})
    harness = [r["lm-eval"] for r in rounds]
    out: dict[str, Any] = {"task": task, "items": len(rounds[0]["lm-eval"].predicted)}
    for name in (n for n in sides if n != "lm-eval"):
        mine = [r[name] for r in rounds]
        out[name] = {
            "cpu_s": [round(t.cpu_s, 2) for t in mine],
            "wall_s": [round(t.wall_s, 2) for t in mine],
            "cpu_ratio_vs_lm_eval": [
                round(h.cpu_s / t.cpu_s, 2) for h, t in zip(harness, mine, strict=True)
            ],
            "cpu_ratio_both_rounds": round(
                sum(h.cpu_s for h in harness) / sum(t.cpu_s for t in mine), 2
            ),
            "predictions_identical_to_lm_eval": all(
                t.predicted == h.predicted for t, h in zip(mine, harness, strict=True)
            ),
            "max_abs_logprob_delta_vs_lm_eval": max(
                abs(a - b)
                for p, q in zip(mine[0].logprobs, harness[0].logprobs, strict=True)
                for a, b in zip(p, q, strict=True)
            ),
        }
    out["lm-eval"] = {
        "cpu_s": [round(h.cpu_s, 2) for h in harness],
        "wall_s": [round(h.wall_s, 2) for h in harness],
    }
    print(json.dumps(out, indent=1), flush=True)
    return out
