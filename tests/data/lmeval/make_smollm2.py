"""Make the lm-eval fixtures of tests/evals/test_eval_lmeval_import.py: real lm-eval runs of
SmolLM2-135M-Instruct (the 4-bit GGUF in ../shared/data, dequantised to float32 by
transformers) on the first items of ARC-Easy from the local MosaicML ICL file, through
lm-eval's own `hf` model, `simple_evaluate` and `EvaluationTracker` (what `lm_eval ...
--output_path OUT --log_samples` runs). One process loads the model once for all runs (a run
whose folder exists is skipped, so an interrupted call is finished by calling it again):

    PYTHONPATH=src python tests/data/lmeval/make_smollm2.py ../shared/data tests/data/lmeval/smollm2

Absolute paths in the results files become ../shared/... and <tasks>/... . The samples files
are then stripped of the benchmark's text (`doc` and `arguments`: the
questions and answers of ARC, which the project must not copy); lm-eval's own `doc_hash` and
`prompt_hash` stay, with every number the import reads.

Runs (arm = folder, lm-eval seed = --seed, which also draws the few-shot example):
    baseline/seed-{0,1,2}   --num_fewshot 1 --limit 24 --seed K
    zero_shot/seed-0        --num_fewshot 0 --limit 32 --seed 0
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

RUNS = (
    ("baseline", 1, 24, 0),
    ("baseline", 1, 24, 1),
    ("baseline", 1, 24, 2),
    ("zero_shot", 0, 32, 0),
)


def main(data: Path, out: Path) -> None:
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from archaudit.evals.lmeval_adapter import write_task_yaml

    tasks = Path(tempfile.mkdtemp())
    arc = data / "benchmarks/icl/world_knowledge/arc_easy.jsonl"
    write_task_yaml(tasks, "arc_easy_local", arc, "\nAnswer:")
    model_dir = data / "models/smollm2-135m-instruct-q4"
    lm = HFLM(
        pretrained=str(model_dir),
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        dtype="float32",
        device="cpu",
        batch_size=8,
    )
    for arm, shots, limit, seed in RUNS:
        if (out / arm / f"seed-{seed}").is_dir():
            continue  # made by an earlier, interrupted call
        results = simple_evaluate(
            model=lm,
            tasks=["arc_easy_local"],
            num_fewshot=shots,
            limit=limit,
            task_manager=TaskManager(include_path=str(tasks), include_defaults=False),
            log_samples=True,
            random_seed=seed,
            numpy_random_seed=seed,
            torch_random_seed=seed,
            fewshot_random_seed=seed,
        )
        tracker = EvaluationTracker(output_path=str(out / arm / f"seed-{seed}"))
        tracker.general_config_tracker.model_name_sanitized = "smollm2-135m-instruct-q4"
        samples = results.pop("samples")
        tracker.save_results_aggregated(results=results, samples=samples)
        for task in results["configs"]:
            tracker.save_results_samples(task_name=task, samples=samples[task])
    strip_benchmark_text(out)
    relative_paths(out, data, tasks)


def relative_paths(out: Path, data: Path, tasks: Path) -> None:
    """Write the results files' paths as the repository sees them: the data under ../shared
    and the task YAML folder (a temporary one) as <tasks>, not this machine's absolute paths."""
    for path in sorted(out.rglob("results_*.json")):
        text = path.read_text()
        text = text.replace(str(data.resolve().parent), "../shared")
        path.write_text(text.replace(str(tasks), "<tasks>"))


def strip_benchmark_text(out: Path) -> None:
    """Drop the logged questions and choices from every samples file under `out`."""
    for path in sorted(out.rglob("samples_*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for row in rows:
            row.pop("doc", None)
            row.pop("arguments", None)
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
