"""Start-up of a run process: fresh interpreters importing what `archaudit run-one` imports
(`archaudit.audit.probe.RUN_IMPORTS`), for this checkout and, with `--against SRC`, another
checkout's `src` folder, alternating in one run so that both see the same machine.

    python benchmarks/startup.py [--rounds 7] [--against /path/to/other/checkout/src]

Prints the median wall and CPU (user + system of the child) seconds per start for each, and
their ratio. torch._dynamo is left out of the import list here: it is imported by torch's
optimizer at the first step, whatever archaudit imports, and would only add the same constant
to both sides.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
IMPORTS = (
    "import archaudit.cli.app, archaudit.audit.runner, archaudit.train.trainer, "
    "archaudit.evals.suites"
)


def one_start(src: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh interpreter importing IMPORTS from `src`."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", IMPORTS], check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another checkout's src folder")
    args = parser.parse_args()
    trees = {"this checkout": HERE} | ({"against": args.against} if args.against else {})
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for src in trees.values():
        one_start(src)  # warm the page cache once
    for _ in range(args.rounds):
        for name, src in trees.items():
            times[name].append(one_start(src))
    print(f"load {os.getloadavg()[0]:.2f}; {args.rounds} starts each; median seconds per start")
    medians = {}
    for name, pairs in times.items():
        wall = statistics.median(w for w, _ in pairs)
        cpu = statistics.median(c for _, c in pairs)
        medians[name] = (wall, cpu)
        print(f"{name:<14} wall {wall:6.2f}  CPU {cpu:6.2f}  ({trees[name]})")
    if args.against:
        (w0, c0), (w1, c1) = medians["this checkout"], medians["against"]
        print(f"this / against: wall {w0 / w1:.2f}×, CPU {c0 / c1:.2f}×")


if __name__ == "__main__":
    main()
