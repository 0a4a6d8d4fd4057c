"""Tokens/s and peak memory of `archaudit data prepare` with 1 and 2 worker processes.

Writes a text file of `--mb` MB (English-like lines, fixed seed), prepares it with the GPT-2 BPE
from ../shared/data/tokenizers/gpt2 (or the byte tokenizer when that is absent) once per worker
count, each in a fresh subprocess so that peak resident memory (this process plus its workers,
from getrusage) belongs to that run alone, and checks that both runs wrote identical shards.

    .venv/bin/python benchmarks/prepare_speed.py --mb 200
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

GPT2 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tokenizers" / "gpt2"

CHILD = """
import json, resource, sys, time
from archaudit.data.prepare import prepare
t0 = time.perf_counter()
r = prepare(sys.argv[1], sys.argv[2], sys.argv[3], workers=int(sys.argv[4]))
dt = time.perf_counter() - t0

print(json.dumps({"tokens": r.n_tokens, "seconds": dt, "hash": r.content_hash,
                  "peak_self_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "peak_child_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def write_text(path: Path, megabytes: int) -> None:
    rng = random.Random(0)
    words = [
        "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with",
        "model", "layer", "attention", "residual", "norm", "seed", "noise", "audit", "scale",
    ]  # fmt: skip
    target = megabytes * 1_000_000
    with path.open("w") as f:
        written = 0
        while written < target:
            block = "".join(
                " ".join(rng.choice(words) for _ in range(rng.randint(3, 20))) + ".\n"
                for _ in range(5_000)
            )
            f.write(block)
            written += len(block)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=20, help="size of the generated text file")
    parser.add_argument("--tokenizer", help="default: gpt2 from ../shared, else byte")
    args = parser.parse_args()
    tokenizer = args.tokenizer or (f"gpt2:{GPT2}" if GPT2.is_dir() else "byte")
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "corpus.txt"
        write_text(text, args.mb)
        rows = []
        for workers in (1, 2):
            out = Path(tmp) / f"w{workers}"
            cmd = [sys.executable, "-c", CHILD, str(text), tokenizer, str(out), str(workers)]
            result = json.loads(subprocess.run(cmd, check=True, capture_output=True).stdout)
            rows.append((workers, result))
        print(f"corpus: {text.stat().st_size / 1e6:.0f} MB, tokenizer {tokenizer.split(':')[0]}")
        print(f"{'workers':>8} {'tokens':>12} {'seconds':>8} {'tokens/s':>12} {'peak MB':>16}")
        for workers, r in rows:
            peak = f"{r['peak_self_kb'] / 1024:.0f} + {r['peak_child_kb'] / 1024:.0f}/worker"
            tps = r["tokens"] / r["seconds"]
            print(f"{workers:>8} {r['tokens']:>12,} {r['seconds']:>8.1f} {tps:>12,.0f} {peak:>16}")
        same = rows[0][1]["hash"] == rows[1][1]["hash"]
        print(f"shards identical across worker counts: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
