"""Where one stress run's CPU time goes, beside what `stress --plan`'s estimate counts.

    python benchmarks/stress_run_parts.py [--audit benchmarks/stress/stress.toml] [--rounds 2]

Trains the baseline's run at the recipe's rate of the stress audit in a temporary folder, each
round in a fresh process as `run-one` does, and times its phases in CPU seconds (user +
system, `time.process_time`): the probe's cold start (`warm.COLD_START`: the imports and the
CLI's `register_commands`; the stored JSON predates its `register_commands`, timed apart then),
the trainer's steps, the rest of its loop (the rows, metrics.jsonl,
the callbacks, validation and signals, the save), and the whole process (its exit included).
In the same process it measures the probe's own step (`probe.measure_steps`), so that the
trainer's step and the probe's are compared under the same load. Writes
benchmarks/stress/run-parts-<audit name>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def child(run_dir: str) -> dict[str, float]:
    """The phases of one run, in this fresh process."""
    t = time.process_time()
    from archaudit.audit.launcher.warm import COLD_START

    exec(COLD_START)  # the probe's own start-up imports
    parts = {"probe start-up": time.process_time() - t}
    from archaudit.audit.execute import runner
    from archaudit.audit.grid import store
    from archaudit.audit.launcher.launch import RunOptions
    from archaudit.audit.planning.probe import measure_steps
    from archaudit.train.loop import trainer

    spent: dict[str, float] = {}
    for name in ("train_step", "fit"):
        _timed(trainer.Trainer, name, spent)
    t = time.process_time()
    runner.run_one(run_dir, RunOptions(threads=1, tracker=""))
    parts["run_one"] = time.process_time() - t
    spec = store.read_spec(Path(run_dir))
    steps = spec.recipe.steps
    parts["trainer step (ms)"] = spent["train_step"] / steps * 1e3
    parts["rest of the loop per step (ms)"] = (spent["fit"] - spent["train_step"]) / steps * 1e3
    _, (steady, _), _ = measure_steps(spec.model, spec, 1, _Alone())
    parts["probe step (ms)"] = steady.cpu * 1e3
    return parts


class _Alone:
    """No neighbour steps beside the probe (the run here has none either)."""

    count = 0

    def step(self, *_: Any) -> None:
        return None


def _timed(owner: type, name: str, spent: dict[str, float]) -> None:
    """Add the CPU seconds of every call of `owner.name` to spent[name]."""
    method = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return method(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - start

    setattr(owner, name, wrapper)


def one_round(run_dir: Path) -> dict[str, float]:
    """A fresh process runs `child`; its whole CPU (exit included) from the rusage of children."""
    for path in run_dir.iterdir():
        if path.name not in ("run.json", "spec.json"):
            subprocess.run(["rm", "-rf", str(path)], check=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(run_dir)],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    parts = json.loads(out.stdout.strip().splitlines()[-1])
    parts["whole process"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audit", default=str(HERE / "stress" / "stress.toml"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    from archaudit.audit.grid.store import materialize
    from archaudit.audit.setup.spec import load_audit
    from archaudit.audit.stability.stress import stress_plan

    with tempfile.TemporaryDirectory() as tmp:
        spec = load_audit(Path(args.audit), runs_dir=tmp)
        plan = stress_plan(spec)
        materialize(plan.plan)
        run = next(
            r for r in plan.plan.runs if r.arm == "baseline" and r.recipe.lr == spec.recipe.lr
        )
        rounds = [one_round(plan.plan.run_dir(run)) for _ in range(args.rounds)]
    medians = {k: round(statistics.median(r[k] for r in rounds), 4) for k in rounds[0]}
    record = {"run": run.path, "rounds": args.rounds, "median": medians}
    record["load_average"] = round(os.getloadavg()[0], 1)
    path = HERE / "stress" / f"run-parts-{spec.name}.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
