"""What the `archaudit run` coordinator costs while its workers train: CPU seconds it spends
per wall second, measured with `resource.getrusage` (this process only, all its threads; the
workers are children and not counted).

A 12-run audit whose workers are fake: the local executor launches a shell loop that appends a
line to the run's metrics.jsonl every second and sleeps, instead of `archaudit run-one`, so the
machine's load does not change what the coordinator itself does.
All 12 run at once (12 workers), not on a terminal (the log-line monitor, as in a pipe or CI).
The figure is taken over the middle of the sleep, after start-up and before the end.

    .venv/bin/python benchmarks/coordinator_idle.py [--seconds 30]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import threading
import time
from pathlib import Path

from archaudit.audit.execute.coordinator import run_audit
from archaudit.audit.grid.plan import make_plan
from archaudit.audit.launcher import executors
from archaudit.audit.setup.spec import load_audit

AUDIT = """
name = "idle"
arms = ["qk_norm", "softpick", "geglu", "post_ln", "ssmax"]
[seeds]
noise_floor = 2
arms = 2
[eval]
suite = ""
[recipe]
steps = 10
batch_tokens = 512
[scales.xs]
d_model = 32
n_layers = 1
n_heads = 2
context_length = 32
[executor]
workers = 12
threads = 1
max_attempts = 1
"""


# $0 is the run directory, $1 the seconds: one metrics line per second, as a trainer would.
WORKER = (
    'i=0; while [ $i -lt $1 ]; do i=$((i+1)); echo "{\\"step\\": $i}" >> "$0/metrics.jsonl"; '
    "sleep 1; done"
)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="How long the workers sleep.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        audit_file = Path(tmp) / "idle.toml"
        audit_file.write_text(AUDIT)
        plan = make_plan(load_audit(audit_file))
        seconds = str(int(args.seconds))
        executors.run_one_argv = lambda run_dir, options: ["sh", "-c", WORKER, run_dir, seconds]
        coordinator = threading.Thread(target=run_audit, args=(plan,), kwargs={"live": False})
        coordinator.start()
        time.sleep(min(5.0, args.seconds / 5))  # start-up: materialize, launch
        window = args.seconds * 0.6
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        time.sleep(window)
        cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
        coordinator.join()
    print(
        f"{len(plan.runs)} runs, {window:.0f} s of waiting: coordinator CPU {cpu:.3f} s "
        f"= {cpu / wall:.2%} of one core"
    )


if __name__ == "__main__":
    main()
