"""What the slope rule's disk cache saves (`slope_rule.rule`, `sigma_allowance`): `archaudit stats
predict` on the stored real ladder (`tests/stats/data/ladder`) in a fresh cache, then again in the
same cache, each its own process as a user runs it; wall and CPU of each, the entries the first
wrote, and whether the two printed the same bytes.

    .venv/bin/python benchmarks/predict_cache.py [--out benchmarks/predict_cache.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LADDER = ROOT / "tests" / "stats" / "data" / "ladder"


def timed_predict(folder: Path, cache: Path) -> tuple[float, float, bytes]:
    """(wall s, CPU s, stdout) of one `stats predict --json` process."""
    env = {**os.environ, "ARCHAUDIT_CACHE": str(cache), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "archaudit.cli", "stats", "predict", "ladder.toml", "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None, help="write the record here (JSON)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, cache = Path(tmp) / "ladder", Path(tmp) / "cache"
        shutil.copytree(LADDER, folder)
        cold = timed_predict(folder, cache)
        entries = sorted(p.name.rsplit("-", 1)[0] for p in (cache / "stats").glob("slope-*"))
        warm = timed_predict(folder, cache)
    record = {
        "cold": {"wall_s": round(cold[0], 2), "cpu_s": round(cold[1], 2)},
        "warm": {"wall_s": round(warm[0], 2), "cpu_s": round(warm[1], 2)},
        "entries": {kind: entries.count(kind) for kind in sorted(set(entries))},
        "same_bytes": cold[2] == warm[2],
        "load": [round(x, 1) for x in os.getloadavg()],
    }
    print(json.dumps(record, indent=1))
    print(f"cold / warm: {cold[0] / warm[0]:.1f}x wall, {cold[1] / warm[1]:.1f}x CPU")
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
