"""Where a measured stress sweep's CPU went, against `stress --plan`'s estimate (issue 54).

Reads a `benchmarks/stress_plan_cost.py` result (the plan's estimate, the sweep's measured CPU)
and the runs folder it trained: the runs' own CPU (`process_cpu_s` in each DONE, the attempt
that finished it: its training and evaluation) of the runs finished after --since (the
command's start, epoch seconds), and the rest of the measured CPU (each run's fork, command
line and exit; the warm server; the coordinator: its start, its dispatch over the wall time,
the analysis at the end). With --samples, the file `sample.sh`-style lines
`epoch pid ppid utime stime cutime cstime` (clock ticks) of the coordinator and its server,
it also splits the rest between them.

    python benchmarks/stress_cost_parts.py --cost F.json --runs-dir DIR --since EPOCH \\
        [--samples S.txt --coordinator PID] --out OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def runs_cpu(runs_dir: Path, since: float) -> tuple[int, float]:
    """(runs finished after `since`, their process CPU seconds)."""
    count, total = 0, 0.0
    for done in runs_dir.glob("*/_stress/*/*/seed-*/DONE"):
        record = json.loads(done.read_text())
        if record.get("finished", 0) >= since:
            count += 1
            total += record["train"]["process_cpu_s"]
    return count, total


def processes(samples: Path, coordinator: int) -> dict[str, Any]:
    """The coordinator's own CPU at its last sample, its dispatch rate (CPU per wall second
    between its first and last sample before the analysis), and its server's own CPU."""
    rows = [line.split() for line in samples.read_text().splitlines() if line.strip()]
    own = [(float(r[0]), (int(r[3]) + int(r[4])) / TICK) for r in rows if int(r[1]) == coordinator]
    server = [(int(r[3]) + int(r[4])) / TICK for r in rows if int(r[2]) == coordinator]
    (t0, c0), (t1, c1) = own[0], own[-1]
    return {
        "coordinator_cpu_s_first_sample": c0,
        "coordinator_cpu_s_last_sample": c1,
        "coordinator_span_s": t1 - t0,
        "server_own_cpu_s_last_sample": server[-1] if server else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost", required=True)
    parser.add_argument("--runs-dir", required=True)
    parser.add_argument("--since", type=float, required=True)
    parser.add_argument("--samples", default=None)
    parser.add_argument("--coordinator", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    cost = json.loads(Path(args.cost).read_text())
    count, runs = runs_cpu(Path(args.runs_dir), args.since)
    measured = cost["measured_cpu_s"]
    out: dict[str, Any] = {
        "cost": args.cost,
        "estimated_cpu_s": cost["estimated_cpu_s"],
        "measured_cpu_s": measured,
        "runs": count,
        "runs_process_cpu_s": round(runs, 1),
        "runs_process_cpu_s_each": round(runs / max(count, 1), 3),
        "rest_cpu_s": round(measured - runs, 1),
    }
    if args.samples:
        out |= processes(Path(args.samples), args.coordinator)
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
