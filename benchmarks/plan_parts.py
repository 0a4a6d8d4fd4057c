"""Each part of `plan`'s estimate timed in reference steps (issue 57, must-show 1): the
constants `archaudit.audit.planning.budget.ReferenceCosts` stands in with when no probe has
measured a part, and how each part scales against the reference step at this machine's load.

    python benchmarks/plan_parts.py [--out benchmarks/plan_parts.json] [--parts start,shape,loop]

Every part is bracketed by the reference step (`probe._reference_times`, six repeats) right
before and right after it, and stated in reference steps (its wall over the two references'
mean), beside the load average: a part that slows with the load as the reference does keeps its
count of reference steps at any load. The parts: a run's cold start (a fresh interpreter
importing what `run-one` imports: also the `run` command's own), a warm server's preload, a
forked warm start; at the 2-arm audit's d48 (`plan_load.py`'s, `--quick`) and at `init`'s
starter's tiny and small scales, a training step, a validation batch, a checkpoint save and the
demo suite at two limits (its cost per item scored), `BESIDE` neighbours stepping the same
shape (the first readings in plan_parts.json, without `_beside`, had none); and the loop probe
(`probe._loop_probe`: its tiny audit run by `archaudit run`), its gaps between runs, between
rounds (a judgement and the next round's set-up) and after its last run (the finish: the last
judgement, the tables, the report). `ReferenceCosts` names the readings each constant came from.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def reference() -> float:
    from archaudit.audit.planning.probe import _reference_times

    return _reference_times(6)[0].wall


def bracketed(measure: Callable[[], dict[str, float]]) -> dict[str, Any]:
    """`measure()`'s values (seconds, and the shape's GFLOPs), the seconds also in reference
    steps timed right before and after it."""
    load, before = os.getloadavg()[0], reference()
    values = measure()
    after = reference()
    ref = (before + after) / 2
    return {
        "load": round((load + os.getloadavg()[0]) / 2, 1),
        "reference_s": [round(before, 4), round(after, 4)],
        "values": {k: round(v, 4) for k, v in values.items()},
        "refs": {k: round(v / ref, 3) for k, v in values.items() if "gflops" not in k},
    }


def starts() -> dict[str, float]:
    from archaudit.audit.launcher.warm import COLD_START, warm_start
    from archaudit.audit.planning.probe import WARM_START, WARM_STARTS

    wall = time.perf_counter()
    subprocess.run([sys.executable, "-c", COLD_START], check=True)
    cold = time.perf_counter() - wall
    wall = time.perf_counter()
    each = warm_start(WARM_START, 1)[0]
    server = max(time.perf_counter() - wall - 2 * each, 0.0)
    return {
        "cold_start": cold,
        "server_start": server,
        "warm_start": warm_start(WARM_START, WARM_STARTS)[0],
    }


BESIDE = 1
"""Runs stepping beside the measured one (`probe.Neighbours`), as the audit's other worker steps
beside each run on a 2-worker pool: the reference costs stand for a run among its peers."""


def shape(audit: Path, scale: str, limits: tuple[int, int]) -> dict[str, float]:
    """A scale's step, validation batch, save, and its suite at two limits (per item scored),
    `BESIDE` neighbours stepping the same shape."""
    from archaudit.audit.grid.plan import make_plan
    from archaudit.audit.planning import budget, probe
    from archaudit.audit.setup.spec import load_audit
    from archaudit.evals.suites import load_suite

    with tempfile.TemporaryDirectory() as tmp:
        plan = make_plan(load_audit(audit, runs_dir=Path(tmp)))
    run = next(r for r in plan.runs if r.scale == scale)
    with probe.Neighbours(BESIDE) as neighbours:
        parts = probe.measure_shape(run.model, run, 1, neighbours)
        model, x = probe._training(run.model, run, 1)
        tasks = len(load_suite(run.suite).tasks)
        suites = {
            limit: probe._suite_time(model.model, dataclass_with(run, limit), x.device).wall
            for limit in limits
        }
    values = {
        "step": parts.step.wall,
        "gflops_per_step": budget._flops_per_step(run) / 1e9,
        "val_batch": parts.val_batch.wall,
        "save": parts.save.wall,
    }
    for limit, scored in suites.items():
        values[f"suite_at_{limit}"] = scored
    low, high = limits
    values["suite_per_item"] = (values[f"suite_at_{high}"] - values[f"suite_at_{low}"]) / (
        (high - low) * tasks
    )
    values["gflops_per_item"] = budget._forward_flops_per_item(run) / 1e9
    return values


def dataclass_with(run: Any, limit: int) -> Any:
    import dataclasses

    return dataclasses.replace(run, eval_limit=limit)


def loop() -> dict[str, float]:
    """The loop probe (`probe._loop_probe`: the probe's tiny sequential audit run by `archaudit
    run`), its gaps: between runs (the start-up not taken off), between rounds (a judgement)
    and after the last run (the finish: the last judgement, the tables, the report)."""
    from archaudit.audit.planning.probe import ZERO, _loop_probe

    wall = time.perf_counter()
    gaps = _loop_probe("cpu", 1, ZERO)
    return {"run_gap": gaps["run"]["wall"], "judgement": gaps["round"]["wall"],
            "finish": gaps["finish"]["wall"], "probe": time.perf_counter() - wall}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "plan_parts.json")
    parser.add_argument("--parts", default="start,shape,loop")
    args = parser.parse_args()
    from archaudit.audit.setup.starter import starter_text
    from plan_load import audit_files

    results: dict[str, Any] = {"machine": {"cpus": os.cpu_count()}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        two = audit_files(folder, quick=True)["two_arms"]
        starter = folder / "starter.toml"
        starter.write_text(starter_text(starter))
        jobs: dict[str, Callable[[], dict[str, float]]] = {
            "start": starts,
            "shape": lambda: shape(two, "d48", (20, 100)),
            "starter_tiny": lambda: shape(starter, "tiny", (20, 100)),
            "starter_small": lambda: shape(starter, "small", (20, 60)),
            "loop": loop,
        }
        for name in args.parts.split(","):
            results[name] = bracketed(jobs[name])
            print(name, results[name], flush=True)
            args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
