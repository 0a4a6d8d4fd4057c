"""Scoring speed: archaudit's scorer against lm-evaluation-harness's `hf` model on the same
model and items, and archaudit's scorer before and after shared-context scoring (issue 45).

All sides start from the same model (SmolLM2-135M, 4-bit GGUF dequantised to an HF Llama, on the
CPU; or with `--run`, an archaudit run scored by archaudit and its `export hf` copy scored by
lm-eval) and the same local task files: a 4-choice suite (ARC-Easy: HellaSwag is not in
../shared/data) and a 2-choice one (PIQA). Each side's time covers building the requests,
tokenising and scoring, not loading the model; wall and CPU (user + system) seconds. `before` is
today's scorer with the shared context switched off; `after` scores the choices from one cached
pass over their context (archaudit models; an HF model shares each context in a tree row either
way, so its `before` and `after` are the same path). Runs alternate (best wall of `--repeats`)
because a shared machine's load changes under a benchmark. Predictions (argmax choice,
acc_norm's verdict) must be identical per item. Needs the `hf` and `lmeval` extras and
../shared/data; writes benchmarks/eval_speed.json.

    nice -n 10 python benchmarks/eval_speed.py [--run RUN] [--tasks arc_easy,piqa] [--limit 60]
    nice -n 10 python benchmarks/eval_speed.py --held-out --run RUN [--limit 40]

`--held-out` (issue 57): the run and its export, both scored by archaudit, against lm-eval's
`hf` on the export, on PIQA and TruthfulQA items no test reads; two rounds alternating, CPU
ratio (benchmarks/eval_speed_held_out.py, writes eval_speed-held-out.json). `--held-out-tasks
piqa` and `--sides export` size a run to a busy machine (lm-eval is always one side);
`--threads 1` keeps the CPU ratio free of idle threads spinning on an oversubscribed machine.

`--float64` runs both sides in float64 (written to `--out`, e.g. eval_speed-float64.json): the
log-likelihoods then differ by what the two implementations compute differently, not by float32
rounding of sums over long continuations.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")  # lm-eval's bars; read when tqdm is imported

import torch

from archaudit.evals import evaluate, load_scoring_model, load_suite
from archaudit.evals.lmeval_adapter import run_local_task, write_task_yaml
from archaudit.evals.scoring import ScoringModel
from archaudit.evals.suites import Suite

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
GGUF = DATA / "models/smollm2-135m-instruct-q4/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = Path(__file__).with_suffix(".json")


@dataclass(frozen=True)
class Scored:
    """One side's run of one task: its seconds and what it predicted per item."""

    wall_s: float
    cpu_s: float
    logprobs: list[list[float]]
    correct_norm: list[bool]

    @property
    def predicted(self) -> list[int]:
        return [max(range(len(lps)), key=lps.__getitem__) for lps in self.logprobs]


def timed(run: Callable[[], tuple[list[list[float]], list[bool]]]) -> Scored:
    wall, cpu = time.perf_counter(), time.process_time()
    logprobs, correct_norm = run()
    return Scored(time.perf_counter() - wall, time.process_time() - cpu, logprobs, correct_norm)


@contextlib.contextmanager
def full_scoring(model: ScoringModel) -> Iterator[None]:
    """Today's scorer: the model offers no shared context for the duration."""
    model.context_cache = lambda: None  # type: ignore[attr-defined]
    try:
        yield
    finally:
        del model.context_cache  # type: ignore[attr-defined]


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def bench_task(model: ScoringModel, harness: Any, task: str, args: argparse.Namespace) -> dict:
    spec = next(t for t in load_suite("real-small").tasks if t.name == task)
    suite = Suite(name="speed", tasks=(spec,))
    folder = Path(tempfile.mkdtemp())
    write_task_yaml(folder, f"{task}_local", DATA / spec.path, spec.prompt_suffix)

    def ours() -> tuple[list[list[float]], list[bool]]:
        result = evaluate(model, suite, limit=args.limit, batch_size=args.batch_size,
                          data_root=DATA, show_progress=False)  # fmt: skip
        items = result.tasks[task].items
        return [list(i.logprobs) for i in items], [bool(i.correct_norm) for i in items]

    def before() -> tuple[list[list[float]], list[bool]]:
        with full_scoring(model):
            return ours()

    def lm_eval() -> tuple[list[list[float]], list[bool]]:
        result = run_local_task(harness, f"{task}_local", folder, limit=args.limit)
        samples = sorted(result["samples"][f"{task}_local"], key=lambda s: s["doc_id"])
        logprobs = [[float(r[0]) for r in s["filtered_resps"]] for s in samples]
        return logprobs, [bool(s["acc_norm"]) for s in samples]

    sides = {"after": ours, "before": before, "lm-eval": lm_eval}
    best: dict[str, Scored] = {}
    for _ in range(args.repeats):
        for name, run in sides.items():
            scored = timed(run)
            if name not in best or scored.wall_s < best[name].wall_s:
                best[name] = scored
    return report(task, best, args)


def report(task: str, best: dict[str, Scored], args: argparse.Namespace) -> dict:
    after, before, harness = best["after"], best["before"], best["lm-eval"]

    def max_delta(a: Scored, b: Scored) -> float:
        return max(abs(x - y) for p, q in zip(a.logprobs, b.logprobs, strict=True)
                   for x, y in zip(p, q, strict=True))  # fmt: skip

    out = {
        "task": task,
        "items": len(after.logprobs),
        "choices": sorted({len(lp) for lp in after.logprobs}),
        "seconds": {
            name: {"wall": round(s.wall_s, 2), "cpu": round(s.cpu_s, 2)} for name, s in best.items()
        },
        "speedup_vs_lm_eval": {
            "wall": round(harness.wall_s / after.wall_s, 2),
            "cpu": round(harness.cpu_s / after.cpu_s, 2),
        },
        "speedup_vs_before": {
            "wall": round(before.wall_s / after.wall_s, 2),
            "cpu": round(before.cpu_s / after.cpu_s, 2),
        },
        "predictions_identical": {
            "lm-eval": after.predicted == harness.predicted
            and after.correct_norm == harness.correct_norm,
            "before": after.predicted == before.predicted
            and after.correct_norm == before.correct_norm,
        },
        "max_abs_logprob_delta": {
            "lm-eval": max_delta(after, harness),
            "before": max_delta(after, before),
        },
    }
    print(json.dumps(out, indent=1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks", default="arc_easy,piqa", help="multiple_choice tasks of real-small"
    )
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, default=GGUF)
    parser.add_argument(
        "--run", type=Path, help="an archaudit run: ours scores it, lm-eval its `export hf` copy"
    )
    parser.add_argument(
        "--float64",
        action="store_true",
        help="both sides in float64: log-likelihoods compared "
        "without float32's rounding of sums over long continuations (timings not comparable)",
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="with --run: the run, its export (both archaudit) and lm-eval hf on the export, "
        "on PIQA and TruthfulQA MC1 items no test reads (benchmarks/eval_speed_held_out.py)",
    )
    parser.add_argument("--piqa-from", type=int, default=200, help="--held-out: first PIQA item")
    parser.add_argument("--tqa-from", type=int, default=100, help="--held-out: first question")
    parser.add_argument(
        "--held-out-tasks", default="piqa,truthfulqa_mc1", help="--held-out: tasks to score"
    )
    parser.add_argument(
        "--sides",
        default="run,export,export-before",
        help="--held-out: archaudit's sides (each against lm-eval): run, export, export-before",
    )
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data root")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from lm_eval.models.huggingface import HFLM

    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    if args.held_out:
        from eval_speed_held_out import bench_held_out

        if args.run is None:
            parser.error("--held-out scores a run and its export: pass --run RUN")
        out = args.out or OUT.with_name("eval_speed-held-out.json")
        out.write_text(json.dumps(bench_held_out(args, args.data, load_avg), indent=1) + "\n")
        print(f"wrote {out}")
        return
    args.out = args.out or OUT
    if args.run is None:
        model = load_scoring_model(args.model)
        if args.float64:
            model.model.double()  # type: ignore[attr-defined]  # the HF model both sides score
        harness = HFLM(pretrained=model.model, tokenizer=model.tokenizer,
                       batch_size=args.batch_size, device="cpu")  # fmt: skip
    else:
        from archaudit.export.hf import export_hf

        export = Path(tempfile.mkdtemp()) / "hf"
        export_hf(args.run, export)
        model = load_scoring_model(args.run)
        if args.float64:
            model.model.double()  # type: ignore[attr-defined]
        harness = HFLM(pretrained=str(export), batch_size=args.batch_size, device="cpu",
                       dtype="float64" if args.float64 else "auto")  # fmt: skip
    load_start = load_avg()
    tasks = [bench_task(model, harness, task, args) for task in args.tasks.split(",")]
    result = {
        "model": model.name if args.run is None else f"{args.run.name} (lm-eval: its HF export)",
        "threads": args.threads,
        "dtype": "float64" if args.float64 else "float32",
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "load_average": {"start": load_start, "end": load_avg()},
        "tasks": tasks,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
