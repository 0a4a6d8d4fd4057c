"""Issue 21, item 4: an A/A test on real training noise.

Trains N baseline seeds at the tiny preset on tinyshakespeare (one `archaudit train` each,
resumable: finished seeds are read back, not retrained), records their final val_loss in a small
JSON (tests/stats/data/aa_tinyshakespeare.json, reused by the default suite), then splits the
seeds at random into a baseline and pseudo-arms many times and judges each split by the default
rule of every design that fits N seeds: the false-positive rate of verdicts on noise that is
real, not simulated, with the seeds' skew and kurtosis.

    PYTHONPATH=src python benchmarks/aa_real_noise.py --seeds 16 --steps 200 --out /tmp/aa
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from archaudit.stats.simulation.aa import aa_test

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "corpora" / "tinyshakespeare" / "input.txt"
RECORD = ROOT / "tests" / "stats" / "data" / "aa_tinyshakespeare.json"


def train_seed(out: Path, seed: int, steps: int, corpus: Path) -> tuple[float, float]:
    """(final val_loss, seconds) of one tiny-preset run."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "archaudit.cli", "train", "--preset", "tiny"]
    command += ["--corpus", str(corpus), "--set", f"recipe.steps={steps}", "--seed", str(seed)]
    command += ["--set", "recipe.threads=1"]  # two threads on a shared, loaded CPU crawl
    command += ["--out", str(out / f"seed-{seed}"), "--json", "-q", "--device", "cpu"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=3600)
    return float(json.loads(done.stdout)["val_loss"]), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--out", type=Path, default=Path("/tmp/archaudit-aa"))
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--record", type=Path, default=RECORD)
    parser.add_argument("--splits", type=int, default=4000)
    args = parser.parse_args()
    values = {}
    for seed in range(args.seeds):
        values[seed], seconds = train_seed(args.out, seed, args.steps, args.corpus)
        print(f"seed {seed}: val_loss {values[seed]:.5f} ({seconds:.0f} s)", flush=True)
    record = {
        "corpus": "tinyshakespeare/input.txt",
        "preset": "tiny",
        "steps": args.steps,
        "metric": "val_loss",
        "values": [values[seed] for seed in range(args.seeds)],
        "command": f"benchmarks/aa_real_noise.py --seeds {args.seeds} --steps {args.steps}",
    }
    args.record.write_text(json.dumps(record, indent=1) + "\n")
    result = aa_test(record["values"], splits=args.splits)
    print(json.dumps(json.loads(result.to_json()), indent=1))


if __name__ == "__main__":
    main()
