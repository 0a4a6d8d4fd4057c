"""Golden runs: fingerprints of what the trainer records, to compare before and after a change.

Four small runs cover the loop's paths: a plain run; gradient accumulation with activation
checkpointing, gradient clipping that bites and a checkpoint every 5 steps; a Switch MoE run
(routing metrics); and a forced divergence (lr 1e3: at step 9, after two checkpoints and two
validations). For each it hashes metrics.jsonl and train.json without the wall-clock throughput,
events.jsonl as written, and every checkpoint's weights, meta and train state (its tensors and
values, less the Python and NumPy RNG states: the trainer never seeds them, so they differ
between processes). Two fingerprint files are equal exactly when the recorded runs are
bit-identical (on the same machine and torch build). Runs already in `--work` are only
fingerprinted again.

    python benchmarks/golden_runs.py --out golden.json [--work DIR] [--no-signals]
    python benchmarks/golden_runs.py --compare before.json after.json

golden_runs.json holds the current trainer's runs on the machine that recorded it;
golden_runs_no_signals.json the same runs with `recipe.log_signals = false`, which the trainer
before the callbacks (1998b51^) recorded identically on that machine. The two files differ in
metrics.jsonl (the signals) and each checkpoint's meta.json (the recipe) only: weights and train
state are the same. Another CPU may round differently: compare runs made on one machine.

About 10 s of CPU (one thread).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from archaudit.config import ModelConfig, Recipe
from archaudit.mods import resolve_arm
from archaudit.rundir import CHECKSUMS, EVENTS, METRICS, TRAIN_RESULT, TRAIN_STATE, checkpoint_dirs
from archaudit.train import train

MODEL = ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=32)
BASE = Recipe(
    steps=30, batch_tokens=256, lr=3e-3, corpus_chars=100_000, eval_every=10,
    checkpoint_every=10, eval_batches=2, threads=1,
)  # fmt: skip
RUNS: dict[str, tuple[ModelConfig, Recipe]] = {
    "plain": (MODEL, BASE),
    "accum_clip_ckpt": (
        MODEL,
        Recipe(
            steps=30,
            batch_tokens=512,
            grad_accumulation=2,
            grad_clip=0.05,
            lr=3e-3,
            corpus_chars=100_000,
            eval_every=7,
            checkpoint_every=5,
            keep_checkpoints=3,
            activation_checkpointing=True,
            eval_batches=2,
            threads=1,
        ),
    ),
    "switch_moe": (resolve_arm("switch_moe").apply(MODEL), BASE),
    "diverged": (
        MODEL,
        Recipe(
            steps=30,
            batch_tokens=256,
            lr=1e3,
            warmup_frac=0.5,
            corpus_chars=60_000,
            eval_every=4,
            checkpoint_every=3,
            keep_checkpoints=5,
            threads=1,
        ),
    ),
}
TIMING = "tokens_per_s"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def without_timing(text: str) -> str:
    rows = [json.loads(line) for line in text.splitlines()]
    return "\n".join(json.dumps({k: v for k, v in r.items() if k != TIMING}) for r in rows)


def fingerprint(run: Path) -> dict[str, Any]:
    result = json.loads((run / TRAIN_RESULT).read_text())
    result.pop(TIMING)
    events = run / EVENTS
    prints: dict[str, Any] = {
        "metrics": sha(without_timing((run / METRICS).read_text()).encode()),
        "metric_rows": len((run / METRICS).read_text().splitlines()),
        "events": sha(events.read_bytes()) if events.is_file() else None,
        "train": result,
    }
    for folder in checkpoint_dirs(run):
        for file in sorted(folder.iterdir()):
            if file.name == TRAIN_STATE:
                prints[f"{folder.name}/{file.name}"] = train_state_hash(file)
            elif file.name != CHECKSUMS:  # covers the unseeded RNG states
                prints[f"{folder.name}/{file.name}"] = sha(file.read_bytes())
    return prints


def train_state_hash(path: Path) -> str:
    state = torch.load(path, weights_only=True)
    for unseeded in ("python", "numpy"):
        state["rng"].pop(unseeded)
    digest = hashlib.sha256()
    for leaf in leaves(state):
        digest.update(
            leaf.numpy().tobytes() if isinstance(leaf, torch.Tensor) else repr(leaf).encode()
        )
    return digest.hexdigest()


def leaves(value: Any) -> Any:
    """Every tensor and plain value of a nested state, in a fixed order."""
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            yield key
            yield from leaves(value[key])
    elif isinstance(value, list | tuple):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def make(out: Path, work: Path, signals: bool = True) -> None:
    prints = {}
    for name, (model, recipe) in RUNS.items():
        train(model, dataclasses.replace(recipe, log_signals=signals), work / name, seed=1)
        prints[name] = fingerprint(work / name)
    out.write_text(json.dumps(prints, indent=2, sort_keys=True) + "\n")


def compare(a: Path, b: Path) -> int:
    before, after = json.loads(a.read_text()), json.loads(b.read_text())
    differ = [
        f"{run}: {key}"
        for run in sorted(before.keys() | after.keys())
        for key in sorted(before.get(run, {}).keys() | after.get(run, {}).keys())
        if before.get(run, {}).get(key) != after.get(run, {}).get(key)
    ]
    for line in differ:
        print("differs", line)
    print(f"{len(before)} runs, {sum(map(len, before.values()))} fingerprints: "
          + ("identical" if not differ else f"{len(differ)} differ"))  # fmt: skip
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2)
    parser.add_argument(
        "--no-signals",
        action="store_true",
        help="recipe.log_signals = false: what the trainer recorded before the Signals callback",
    )
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    with tempfile.TemporaryDirectory() as tmp:
        make(args.out, args.work or Path(tmp), signals=not args.no_signals)


if __name__ == "__main__":
    main()
