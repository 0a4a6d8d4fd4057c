"""What the demo spends that trains nothing, this checkout against another in one run of this
script (issue 45, must-show 1; docs/benchmarks/demo-history.md).

    python benchmarks/demo_parts.py [--against /path/to/other/checkout/src] [--rounds 5]
        [--demo DIR ...] [--json benchmarks/demo_parts.json]

- register: CPU seconds of the CLI's `register_commands` (the flags' help texts, read from the
  source) in a process that has already imported what a run imports (`warm.PRELOAD`), the
  median over `--rounds` fresh interpreters, alternating the two checkouts;
- run imports: CPU seconds of `import archaudit.train.loop.trainer` (what a run imports before its
  first step, without the CLI) and whether it loads `scipy.stats`;
- `--demo DIR` (a finished `archaudit demo` runs folder, repeatable): its timeline from the run
  directories' records (each run's start in attempts.jsonl, its end in DONE): wall from the
  first start to the last end, the core-seconds no run used (`workers` × wall − Σ run time),
  the seconds with no run in flight (the loop judging between rounds) and each run's seconds.

Prints one line per part; `--json` stores them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"

REGISTER = """
import importlib, time
from archaudit.audit.launcher.warm import PRELOAD
for module in PRELOAD:
    importlib.import_module(module)
import archaudit.cli as cli
start = time.process_time()
cli.register_commands()
print(time.process_time() - start)
"""
RUN_IMPORTS = """
import sys, time
start = time.process_time()
import archaudit.train.loop.trainer
print(time.process_time() - start, int("scipy.stats" in sys.modules))
"""


def in_tree(src: Path, code: str) -> list[float]:
    """The numbers `code` prints, run by a fresh interpreter with `src` on the path."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    return [float(x) for x in out.stdout.split()]


def medians(trees: dict[str, Path], code: str, rounds: int) -> dict[str, list[float]]:
    """Per tree, the median of each number `code` prints over `rounds` runs, alternating."""
    seen: dict[str, list[list[float]]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, src in trees.items():
            seen[name].append(in_tree(src, code))
    return {
        name: [statistics.median(col) for col in zip(*rows, strict=True)]
        for name, rows in seen.items()
    }


def run_spans(audit_dir: Path) -> list[tuple[str, float, float]]:
    """(run, start, end) of every finished run: its last attempt's start, DONE's finish."""
    spans = []
    for done in sorted(audit_dir.glob("*/*/seed-*/DONE")):
        attempts = (done.parent / "attempts.jsonl").read_text().splitlines()
        start = json.loads(attempts[-1])["started"]
        end = json.loads(done.read_text())["finished"]
        spans.append((str(done.parent.relative_to(audit_dir)), start, end))
    return sorted(spans, key=lambda s: s[1])


def timeline(audit_dir: Path, workers: int) -> dict[str, object]:
    """The demo's wall, idle core-seconds and seconds with no run in flight (see the header)."""
    spans = run_spans(audit_dir)
    first, last = spans[0][1], max(end for _, _, end in spans)
    busy = sum(end - start for _, start, end in spans)
    gaps, reach = [], first
    for _, start, end in spans:
        if start > reach:
            gaps.append(start - reach)
        reach = max(reach, end)
    return {
        "runs": len(spans),
        "wall_s": last - first,
        "run_s": busy,
        "idle_core_s": workers * (last - first) - busy,
        "no_run_gaps_s": gaps,
        "per_run_s": {name: end - start for name, start, end in spans},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another checkout's src")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--demo", type=Path, action="append", default=[])
    parser.add_argument("--workers", type=int, default=2, help="the demos' workers")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    trees = {"this checkout": HERE} | ({"against": args.against} if args.against else {})
    result: dict[str, object] = {"load": os.getloadavg()[0]}
    result["register_cpu_s"] = {k: v[0] for k, v in medians(trees, REGISTER, args.rounds).items()}
    imports = medians(trees, RUN_IMPORTS, args.rounds)
    result["run_imports_cpu_s"] = {k: v[0] for k, v in imports.items()}
    result["run_imports_scipy_stats"] = {k: bool(v[1]) for k, v in imports.items()}
    result["demos"] = {d.name: timeline(d / "runs" / "demo", args.workers) for d in args.demo}
    result["load_after"] = os.getloadavg()[0]
    for key, value in result.items():
        if key == "demos":
            value = {d: {k: v for k, v in t.items() if k != "per_run_s"} for d, t in value.items()}
        print(f"{key}: {value}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
