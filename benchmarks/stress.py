"""The default stress audit: train it, judge it, store the result as test data, and write the
published-directions table of docs/stability.md from it.

    python benchmarks/stress.py [--full | --small] [--runs-dir DIR] [--workers N] [--plan-ratio]
    python benchmarks/stress.py --docs        # only rewrite the docs tables from the stored results

Default: benchmarks/stress/stress.toml (six arms below the tiny preset's width, six rates over
2.5 decades, three seeds, a depth stress of the R7 arms at 2× and 4× the layers, and
the rates above the grid while the baseline holds): 18.4 CPU-minutes measured. `--small` runs
stress-small.toml (the same at 40 steps), `--full`
stress-full.toml (the audit2026 suite's residual, norm and attention-logit arms at the tiny
preset, three seeds, eight rates). The result goes to tests/data/stress/<audit name>.json,
which the default tests read (they never train); the default's and the small one's directions
tables go to docs/stability.md. `--plan-ratio` first estimates the sweep as `stress --plan`
does (the probe), then compares it with the measured wall time and the runs' CPU time (the
reaped run-one processes' user + system) in benchmarks/stress/plan-ratio-<audit name>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import time
from pathlib import Path

from archaudit.audit.execute.stress_run import run_stress
from archaudit.audit.setup.spec import AuditSpec, load_audit
from archaudit.audit.stability.stress import StressPlan, stress_plan
from archaudit.audit.stability.stress_checks import check_directions, directions_table
from archaudit.audit.stability.stress_result import analyse, read_result, write_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "tests" / "data" / "stress"
DOCS = ROOT / "docs" / "stability.md"
TABLES = {"stress-tiny": "directions", "stress-small": "directions-small"}
"""The stored results whose directions tables docs/stability.md shows, and their markers."""


def write_docs_table(result_path: Path, marker: str) -> None:
    """Replace the table between the markers `marker`:start / :end of docs/stability.md."""
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    table = directions_table(check_directions(read_result(result_path)))
    text = DOCS.read_text()
    block = f"{start}\n{table}{end}"
    DOCS.write_text(re.sub(f"{re.escape(start)}.*?{re.escape(end)}", block, text, flags=re.S))


def children_cpu() -> float:
    """User + system seconds of this process's reaped children (the run-one processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def estimate(spec: AuditSpec) -> dict[str, float]:
    """`stress --plan`'s estimate of the runs to train (the grid, and the rates above it at
    most), from the probe."""
    from archaudit.audit.planning.stress_time import stress_time

    plan = stress_plan(spec)
    timed = stress_time(plan)
    return {"runs": len(plan.plan.runs), "above_left": plan.above_left} | {
        k: float(v) for k, v in (timed.to_json() if timed else {}).items() if k != "time"
    }


def write_ratio(
    name: str, estimated: dict[str, float], trained: StressPlan, wall: float, cpu: float
) -> None:
    """The estimate over the measured time, the rates above the grid counted as trained."""
    above = sum(p.kind == "above" for p in trained.points)
    share = above / estimated["above_left"] if estimated["above_left"] else 0.0
    cpu_est = estimated["estimated_cpu_s"] + share * estimated["above_grid_cpu_s"]
    wall_est = estimated["estimated_wall_s"] + share * estimated["above_grid_wall_s"]
    record = {
        "runs": estimated["runs"] + above,
        "estimated_cpu_s": cpu_est,
        "measured_cpu_s": cpu,
        "cpu_ratio": cpu_est / cpu,
        "estimated_wall_s": wall_est,
        "measured_wall_s": wall,
        "wall_ratio": wall_est / wall,
        "load_average_at_end": os.getloadavg()[0],
    }
    path = HERE / "stress" / f"plan-ratio-{name}.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"estimate / measured: CPU {record['cpu_ratio']:.2f}, wall {record['wall_ratio']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full stress audit")
    parser.add_argument("--small", action="store_true", help="the default at 40 steps")
    parser.add_argument("--docs", action="store_true", help="only rewrite the docs table")
    parser.add_argument("--runs-dir", default=None, help="where the runs go [beside the file]")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--plan-ratio", action="store_true", help="estimate, then compare")
    args = parser.parse_args()
    name = "stress-full" if args.full else "stress-small" if args.small else "stress"
    audit = HERE / "stress" / f"{name}.toml"
    spec = load_audit(audit, runs_dir=args.runs_dir)
    stored = DATA / f"{spec.name}.json"
    if not args.docs:
        estimated = estimate(spec) if args.plan_ratio else None
        t0, c0, runs0 = time.perf_counter(), time.process_time(), children_cpu()
        plan = run_stress(spec, workers=args.workers, live=False)
        wall, runs_cpu = time.perf_counter() - t0, children_cpu() - runs0
        result = analyse(plan)
        DATA.mkdir(parents=True, exist_ok=True)
        write_result(result, stored)
        print(
            f"{result.cost}; wall {wall:.0f} s; the runs' CPU {runs_cpu:.0f} s; stored in {stored}"
        )
        print(f"this process's CPU {time.process_time() - c0:.0f} s")
        if estimated is not None and "estimated_cpu_s" in estimated:  # runs were left to train
            write_ratio(spec.name, estimated, plan, wall, runs_cpu)
    for audit_name, marker in TABLES.items():
        if (DATA / f"{audit_name}.json").is_file():
            write_docs_table(DATA / f"{audit_name}.json", marker)
    print(f"wrote the directions tables of {DOCS}")


if __name__ == "__main__":
    main()
