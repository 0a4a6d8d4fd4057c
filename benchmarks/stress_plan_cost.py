"""`stress --plan`'s CPU estimate against the CPU the sweep then takes (issue 54).

Runs `archaudit stress AUDIT --plan --json` (the probe's estimate: `estimated_cpu_s`, and at
most `above_grid_cpu_s` more), then `archaudit stress AUDIT` in a child process, and measures
the CPU time (user + system) of every process it started with `resource.getrusage`
(RUSAGE_CHILDREN: the coordinator and every run it spawned, waited for), not the wall clock.
Writes the JSON to --out: both numbers, their ratio, and the verdicts of the stored result.

    nice -n 10 python benchmarks/stress_plan_cost.py AUDIT --runs-dir DIR --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TOLERANCE = 0.30


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _archaudit(*args: str) -> tuple[str, float, float]:
    """The command's stdout, its children's CPU seconds and its wall seconds."""
    cpu, wall = _children_cpu(), time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "archaudit", *args],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    )
    return done.stdout, _children_cpu() - cpu, time.monotonic() - wall


def _verdicts(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    return {
        "rate": {v["arm"]: [v["verdict"], v["p_primary_adjusted"]] for v in data["verdicts"]},
        "logit": {
            v["arm"]: [v["verdict"], v["p_adjusted"], v["measure"]]
            for v in data.get("logit_verdicts", [])
        },
        "depth": {v["arm"]: [v["verdict"], v["p_adjusted"]] for v in data["depth_verdicts"]},
        "group": data.get("group"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("audit")
    parser.add_argument("--runs-dir", required=True)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    common = [args.audit, "--runs-dir", args.runs_dir, *(f"--set={o}" for o in args.overrides)]
    plan_out, plan_cpu, _ = _archaudit("stress", *common, "--plan", "--json")
    plan = json.loads(plan_out)
    Path(args.out).write_text(json.dumps({"plan": plan, "running": True}, indent=1) + "\n")
    _, cpu, wall = _archaudit("stress", *common, "--quiet")
    estimate = plan.get("estimated_cpu_s")
    name = json.loads(plan_out).get("cost", "")
    stored = next(Path(args.runs_dir).glob("*/_stress/stress.json"))
    ratio = cpu / estimate if estimate else None
    out = {
        "audit": args.audit,
        "overrides": args.overrides,
        "plan": name,
        "estimated_cpu_s": estimate,
        "above_grid_cpu_s": plan.get("above_grid_cpu_s"),
        "plan_command_cpu_s": round(plan_cpu, 1),
        "measured_cpu_s": round(cpu, 1),
        "measured_wall_s": round(wall, 1),
        "ratio_measured_to_estimate": None if ratio is None else round(ratio, 3),
        "within_30_percent": None if ratio is None else abs(ratio - 1) <= TOLERANCE,
        "load_1min_after": os.getloadavg()[0],
        "verdicts": _verdicts(stored),
    }
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
