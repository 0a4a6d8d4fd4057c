"""Start-up of a run process, cold against warm, and the demo's CPU per run, each side measured in
one run of this script so that both see the same machine.

    python benchmarks/startup.py [--rounds 7] [--against /path/to/other/checkout/src]
        [--json benchmarks/startup.json]
    python benchmarks/startup.py --demo [--against SRC] [--keep DIR]
        [--json benchmarks/startup-demo.json]

- cold: a fresh interpreter doing what `archaudit run-one` does before its first step
  (`archaudit.audit.launcher.warm.COLD_START`: torch, torch._dynamo, the runner, the trainer, the
  suites, the CLI's commands), for this checkout and, with `--against SRC`, another checkout's `src`
  (alternating, the same statement on both sides);
- warm: `archaudit run-one --help` forked by the warm server
  (`archaudit.audit.launcher.warm.warm_start`, what the probe measures), from the request to the
  exit report; its CPU is the child's;
- fork: the server's own CPU for one fork and reap of a child that exits at once;
- `--demo` (instead of the starts): `archaudit demo --quiet` in a fresh folder for this checkout
  and `--against`, both at once (the same load for both): wall, CPU of each whole process tree
  (user + system of it and its reaped descendants), CPU per finished run, the seconds before
  its first run and after its last, and whether both printed the same verdict tables (each
  demo's printout is `demo.out` in its folder: under `--keep DIR` when given).

Prints the median wall and CPU seconds per start and the ratios; `--json` stores them.
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

HERE = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(HERE))
os.environ["PYTHONPATH"] = str(HERE)  # the warm server imports this checkout too

from archaudit.audit.launcher.warm import COLD_START, warm_start  # noqa: E402
from archaudit.audit.planning.probe import WARM_START  # noqa: E402
from demo_parts import run_spans  # noqa: E402

FORK = """
import os, resource, statistics, sys, time
from archaudit.audit.launcher.warm import preload
preload()
walls, cpus = [], []
for _ in range(int(sys.argv[1])):
    usage, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    after = resource.getrusage(resource.RUSAGE_SELF)
    walls.append(time.perf_counter() - wall)
    cpus.append(after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime)
print(statistics.median(walls), statistics.median(cpus))
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_child(argv: list[str], src: Path, cwd: Path | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of `argv` with `src` on the path, its whole reaped process tree."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    before, start = children_cpu(), time.perf_counter()
    subprocess.run(argv, check=True, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, children_cpu() - before


def cold_starts(trees: dict[str, Path], rounds: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of a fresh interpreter's start-up per tree, alternating."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for src in trees.values():
        timed_child([sys.executable, "-c", COLD_START], src)  # warm the page cache once
    for _ in range(rounds):
        for name, src in trees.items():
            times[name].append(timed_child([sys.executable, "-c", COLD_START], src))
    return {
        name: (statistics.median(w for w, _ in pairs), statistics.median(c for _, c in pairs))
        for name, pairs in times.items()
    }


def fork_cost(rounds: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    out = subprocess.run(
        [sys.executable, "-c", FORK, str(rounds)], check=True, env=env, capture_output=True
    )
    wall, cpu = out.stdout.split()
    return float(wall), float(cpu)


def demos(trees: dict[str, Path], keep: Path | None) -> dict[str, object]:
    """`archaudit demo --quiet` from scratch in each tree at once: wall, CPU, CPU per run, the
    seconds before its first run started and after its last run ended (`demo_parts.run_spans`),
    and whether every demo printed the same verdict tables. `keep`: the demos' folders go there
    (each with its printout, demo.out), else in a temporary folder."""
    argv = [sys.executable, "-m", "archaudit.cli", "demo", "--quiet"]
    with tempfile.TemporaryDirectory() as scratch:
        folder = keep or Path(scratch)
        start, wall_start, procs = time.perf_counter(), time.time(), {}
        for name, src in trees.items():
            cwd = folder / name.replace(" ", "-")
            cwd.mkdir(parents=True)
            env = {**os.environ, "PYTHONPATH": str(src)}
            with open(cwd / "demo.out", "w") as out:
                procs[name] = (subprocess.Popen(argv, env=env, cwd=cwd, stdout=out), cwd)
        figures: dict[str, object] = {}
        names = {proc.pid: name for name, (proc, _) in procs.items()}
        while names:  # in the order they finish, so that each wall is its own
            pid, status, usage = os.wait4(-1, 0)
            name = names.pop(pid)
            proc, cwd = procs[name]
            proc.returncode = os.waitstatus_to_exitcode(status)
            figures[name] = demo_figures(cwd, proc.returncode, usage, start, wall_start)
            shown = figures[name].items()  # type: ignore[attr-defined]
            print(f"demo {name:<14} " + "  ".join(f"{k} {v:.1f}" for k, v in shown))
        tables = {verdict_tables(cwd / "demo.out") for _, cwd in procs.values()}
    print(f"verdict tables identical: {len(tables) == 1}")
    return figures | {"verdict_tables_identical": len(tables) == 1}


def demo_figures(
    cwd: Path, code: int, usage: resource.struct_rusage, start: float, wall_start: float
) -> dict[str, float]:
    """One finished demo's figures (see `demos`)."""
    cpu = usage.ru_utime + usage.ru_stime
    spans = run_spans(cwd / "runs" / "demo")
    first, last = min(s for _, s, _ in spans), max(e for _, _, e in spans)
    return {
        "exit": code,
        "wall_s": time.perf_counter() - start,
        "cpu_s": cpu,
        "runs": len(spans),
        "cpu_per_run_s": cpu / max(len(spans), 1),
        "before_first_run_s": first - wall_start,
        "after_last_run_s": time.time() - last,
    }


def verdict_tables(printout: Path) -> str:
    """The demo's verdict tables as printed: everything before its closing line (which states
    the minutes it took and where its results are)."""
    text = printout.read_text()
    return text[: text.index("demo audit:")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another checkout's src folder")
    parser.add_argument("--demo", action="store_true", help="run the demo on each side instead")
    parser.add_argument("--keep", type=Path, help="with --demo: keep the demos' folders here")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    trees = {"this checkout": HERE} | ({"against": args.against} if args.against else {})
    load = os.getloadavg()[0]
    if args.demo:
        result: dict[str, object] = {"load": load, "demo": demos(trees, args.keep)}
        result["load_after"] = os.getloadavg()[0]
    else:
        result = starts(trees, args.rounds)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


def starts(trees: dict[str, Path], rounds: int) -> dict[str, object]:
    """Cold, warm and fork figures, printed and returned."""
    load = os.getloadavg()[0]
    cold = cold_starts(trees, rounds)
    warm = warm_start(WARM_START, rounds)
    fork = fork_cost(rounds)
    print(f"load {load:.2f}; {rounds} starts each; median seconds per start")
    for name, (wall, cpu) in cold.items():
        print(f"cold {name:<14} wall {wall:6.2f}  CPU {cpu:6.2f}  ({trees[name]})")
    print(f"warm {'this checkout':<14} wall {warm[0]:6.2f}  CPU {warm[1]:6.2f}  (forked)")
    print(f"fork (server)       wall {fork[0]:6.3f}  CPU {fork[1]:6.3f}")
    (cw, cc) = cold["this checkout"]
    print(f"warm / cold: wall {warm[0] / cw:.3f}×, CPU {(warm[1] + fork[1]) / cc:.3f}×")
    return {"load": load, "rounds": rounds, "cold": cold, "warm": warm, "fork": fork}


if __name__ == "__main__":
    main()
