"""Scoring speed: archaudit's scorer against lm-evaluation-harness on the same model and items.

Both start from the same loaded model (SmolLM2-135M, 4-bit GGUF dequantised, on the CPU) and
the same local task file; each side's time covers building the requests, tokenising and
scoring, not loading the model. Runs alternate (best of `--repeats`) because a shared machine's
load changes under a benchmark. Needs the `hf` and `lmeval` extras and ../shared/data.

    python benchmarks/eval_speed.py [--task arc_easy] [--limit 100] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # lm-eval's bars; read when tqdm is imported

from archaudit.evals import evaluate, load_scoring_model, load_suite
from archaudit.evals.lmeval_adapter import run_local_task, write_task_yaml
from archaudit.evals.suites import Suite

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
GGUF = DATA / "models/smollm2-135m-instruct-q4/SmolLM2-135M-Instruct.Q4_1.gguf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="arc_easy", help="a multiple_choice task of real-small")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", type=Path, default=GGUF)
    args = parser.parse_args()

    from lm_eval.models.huggingface import HFLM

    logging.getLogger("lm_eval").setLevel(logging.ERROR)

    spec = next(t for t in load_suite("real-small").tasks if t.name == args.task)
    suite = Suite(name="speed", tasks=(spec,))
    model = load_scoring_model(args.model)
    harness = HFLM(
        pretrained=model.model, tokenizer=model.tokenizer, batch_size=args.batch_size, device="cpu"
    )
    folder = Path(tempfile.mkdtemp())
    write_task_yaml(folder, f"{args.task}_local", DATA / spec.path, spec.prompt_suffix)

    def ours() -> tuple[float, float]:
        result = evaluate(
            model,
            suite,
            limit=args.limit,
            batch_size=args.batch_size,
            data_root=DATA,
            show_progress=False,
        )
        task = result.tasks[args.task]
        return task.acc.value, task.acc_norm.value

    def lm_eval() -> tuple[float, float]:
        result = run_local_task(harness, f"{args.task}_local", folder, limit=args.limit)
        metrics = result["results"][f"{args.task}_local"]
        return metrics["acc,none"], metrics["acc_norm,none"]

    best = {"archaudit": float("inf"), "lm-eval": float("inf")}
    accuracy = {}
    for _ in range(args.repeats):
        for name, run in (("archaudit", ours), ("lm-eval", lm_eval)):
            start = time.perf_counter()
            accuracy[name] = run()
            best[name] = min(best[name], time.perf_counter() - start)

    print(f"{args.task}, {args.limit} items, batch size {args.batch_size}, model {model.name}")
    for name, seconds in best.items():
        acc, acc_norm = accuracy[name]
        rate = args.limit / seconds
        print(f"  {name:10s} {rate:7.2f} examples/s  ({seconds:6.1f} s; ", end="")
        print(f"acc {acc:.3f}, acc_norm {acc_norm:.3f})")
    print(f"  speed-up   {best['lm-eval'] / best['archaudit']:.2f}x (goal >= 2x)")


if __name__ == "__main__":
    main()
