"""Softpick's cost against the baseline's, part by part (issue 45 item 3): for each scale of an
audit file (the demo's by default), the probe's steady training step and warm-up
(`probe.measure_steps`, at the executor's threads) and one evaluation forward at the training
batch (no grad, the fastest of 3 after one untimed), printed one JSON line per (arm, scale).

    python benchmarks/softpick_parts.py [AUDIT.toml]

`plan` scales a probed scale's validation and suite by the arm's training-step ratio; this shows
whether softpick's evaluation forward (explicit attention, no SDPA) costs more than that ratio.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from archaudit.audit.grid.plan import make_plan
from archaudit.audit.launcher.executors import make_executor
from archaudit.audit.planning import probe
from archaudit.audit.setup.spec import load_audit
from archaudit.train import step as training

DEMO = Path(__file__).resolve().parents[1] / "src" / "archaudit" / "audit" / "execute" / "demo.toml"
ARMS = ("baseline", "softpick")
REPEATS = 3


def main() -> None:
    plan = make_plan(load_audit(Path(sys.argv[1]) if len(sys.argv) > 1 else DEMO))
    threads = make_executor(plan.spec.executor, plan.audit_dir).threads
    seen: set[tuple[str, str]] = set()
    for run in plan.runs:
        if run.arm not in ARMS or (run.arm, run.scale) in seen:
            continue
        seen.add((run.arm, run.scale))
        with probe.Neighbours(0) as neighbours:
            parts, (steady, warmup), x = probe.measure_steps(run.model, run, threads, neighbours)
        parts.model.eval()
        forwards = []
        with torch.no_grad(), training.autocast(x.device, run.recipe):
            parts.model(x)
            for _ in range(REPEATS):
                start = time.perf_counter()
                parts.model(x)
                forwards.append(time.perf_counter() - start)
        row = {"arm": run.arm, "scale": run.scale, "threads": threads, "batch": list(x.shape)}
        row |= {"step_s": steady.wall, "warmup_s": warmup.wall, "eval_forward_s": min(forwards)}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
