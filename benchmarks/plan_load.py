"""`plan`'s estimate against the measured wall time, on an idle machine and under load (issue
46, must-show 2): a reduced copy of the demo (its arms, scales, suite and sequential design, a
quarter of its tokens) and a 2-arm `--until-settled` audit (qk_norm, softpick at the demo's d48);
with `--examples`, issue 45's must-show 3: docs/examples/moe-tiny.toml and `archaudit init`'s
starter (fixed designs), each with its tokens divided (below) to fit a 10-minute run.

    python benchmarks/plan_load.py [--quick] [--load 4] [--out benchmarks/plan_load.json]
                                   [--audits demo_small,two_arms] [--conditions idle,loaded]
    python benchmarks/plan_load.py --examples [--quick]   # idle; plan_load-examples.json
    python benchmarks/plan_load.py --first-plan [--load 8] [--no-loop] [--probe-budget 0]
                                                            # issue 57; plan_load-first.json

With `--first-plan` (issue 57, must-show 1): `--load` busy processes (nice 0, started and stopped
here) hold the machine at a load of about that many; in a fresh cache, `archaudit init
my_audit.toml --arms suite:audit2026` then its first `plan` (its wall: the goal is 2 minutes,
whatever the probe budget leaves estimated ≈), then the 2-arm `--until-settled` audit (`--quick`
size) planned and run under the same load, its estimate against its measured wall (goal ±35%),
and under `parts` each part of the estimate beside what the run spent on it (`spent_parts`,
`compared_parts`: the audit's start, a run, its training, the rounds, a judgement between
rounds, the finish). `--load 0` adds no busy process: the machine as others load it.

For each condition (idle, then `--load` busy processes that this benchmark starts and stops), each
audit is planned (`plan --json`: its sequential estimate, the loop's expected runs at the
machine's speed now, or a fixed design's estimated wall) and run (`run`, `--until-settled` for a
sequential one) in a fresh runs folder; one probe cache serves both conditions, so the loaded plan
reads timings taken idle (scaled by the reference step, `archaudit.audit.planning.probe`). The ratio
is measured wall over `plan`'s estimate; `per_run` is the same with the estimate taken at the runs
the loop did spend (the loop's run count is a draw; its range is in `plan`). `--quick`: an eighth
of the demo's tokens. The examples' reductions (`EXAMPLE_DIVISORS`): moe-tiny's tokens / 2
(/ 4 with --quick), the starter's (the baseline and 4 arms × 2 scales × 3 seeds, 30 runs) / 8
(/ 16), same arms, scales, seeds and suite. Writes JSON with `uptime` at each step; the lead
reruns it on idle cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "src" / "archaudit" / "audit" / "execute" / "demo.toml"
TWO_ARMS = 'arms = ["qk_norm", "softpick"]'
BUSY = "while True: pass"


def audit_files(folder: Path, quick: bool) -> dict[str, Path]:
    """The reduced demo and the 2-arm audit, written into `folder`."""
    tokens = 491520 // (8 if quick else 4)
    text = DEMO.read_text().replace("tokens = 491520", f"tokens = {tokens}")
    text = text.replace("eval_every = 50", "eval_every = 20")
    demo = folder / "demo_small.toml"
    demo.write_text(text.replace('name = "demo"', 'name = "demo_small"'))
    two = text.replace('name = "demo"', 'name = "two_arms"')
    two = two.replace('arms = ["qk_norm", "softpick", "post_ln", "hybrid_norm"]', TWO_ARMS)
    two = two[: two.index("[scales.d64]")] + two[two.index("[executor]") :]
    path = folder / "two_arms.toml"
    path.write_text(two)
    return {"demo_small": demo, "two_arms": path}


MOE_TINY = ROOT / "docs" / "examples" / "moe-tiny.toml"
EXAMPLE_DIVISORS = {"moe_tiny": (2, 4), "starter": (8, 16)}
"""Each example's tokens divided by (full run, --quick)."""


def example_files(folder: Path, quick: bool) -> dict[str, Path]:
    """moe-tiny and `archaudit init`'s starter, their token budgets divided
    (`EXAMPLE_DIVISORS`), written into `folder`."""
    from archaudit.audit.setup.starter import starter_text

    texts = {"moe_tiny": MOE_TINY.read_text(), "starter": starter_text(folder / "starter.toml")}
    files = {}
    for name, text in texts.items():
        divisor = EXAMPLE_DIVISORS[name][quick]
        text = re.sub(
            r"^tokens = ([\d_]+)",
            lambda m, d=divisor: f"tokens = {int(m.group(1).replace('_', '')) // d}",
            text,
            flags=re.MULTILINE,
        )
        text = re.sub(r'^name = ".*"', f'name = "{name}"', text, count=1, flags=re.MULTILINE)
        files[name] = folder / f"{name}.toml"
        files[name].write_text(text)
    return files


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def cli(args: list[str], env: dict[str, str]) -> tuple[str, float]:
    """(stdout, wall seconds) of one archaudit command."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "archaudit.cli", *args], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"archaudit {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout, time.perf_counter() - start


def measure(
    audit: Path, runs_dir: Path, env: dict[str, str], budget: float | None = None
) -> dict[str, object]:
    """Plan the audit (until settled when it is sequential; with `budget`, that
    `--probe-budget`), run it, and compare."""
    common = ["--runs-dir", str(runs_dir)]
    common += ["--until-settled"] if 'policy = "sequential"' in audit.read_text() else []
    budgeted = [] if budget is None else ["--probe-budget", f"{budget:g}"]
    planned, plan_wall = cli(["plan", str(audit), *common, *budgeted, "--json"], env)
    summary = json.loads(planned)
    loop = planned_loop(summary)
    started = time.time()
    ran, wall = cli(["run", str(audit), *common, "--json", "--quiet"], env)
    done = json.loads(ran)
    runs = done["sequential"]["runs"] if "sequential" in done else summary["total_runs"]
    per_run = loop["wall_s"] / loop["expected_runs"]
    spent = spent_parts(runs_dir / audit.stem, started, time.time())
    return {
        "parts": compared_parts(summary, loop, spent),
        "train_ratio_by_arm": train_ratios(summary, runs_dir / audit.stem),
        "plan_s": round(plan_wall, 1),
        "estimate_s": round(loop["wall_s"], 1),
        "estimate_range_s": [round(x, 1) for x in loop["wall_range_s"]],
        "expected_runs": round(loop["expected_runs"], 2),
        "runs_range": loop["runs_range"],
        "effects": loop["effects"],
        "audit_start_s": summary["audit_start_s"],
        "run_overhead_s": summary["run_overhead_s"],
        "round_overhead_s": summary["round_overhead_s"],
        "runs": runs,
        "measured_s": round(wall, 1),
        "ratio": round(wall / loop["wall_s"], 3),
        "per_run_ratio": round(wall / (per_run * runs), 3),
        "speed_range": summary["speed_range"],
        "uptime_after": uptime(),
    }


def spent_parts(audit_dir: Path, started: float, ended: float) -> dict[str, float]:
    """What the run spent, part by part, from its records: the audit's start (the command's
    start to its first run's), a run's mean wall (its first attempt's start to its DONE) and
    training (tokens over the trainer's tokens/s), the rounds, the mean gap between a round's
    last run and the next round's first (a judgement, with the next round's set-up) and the
    last run's end to the command's end (the last judgement and the tables)."""
    from archaudit.audit.execute.sequential import read_rounds

    later = {(s.arm, s.scale, s.seed): r.index + 1 for r in read_rounds(audit_dir) for s in r.added}
    rows = []
    for done in sorted(audit_dir.glob("*/*/seed-*/DONE")):
        arm, scale, seed = done.parent.relative_to(audit_dir).parts
        first = json.loads((done.parent / "attempts.jsonl").read_text().splitlines()[0])
        train = json.loads((done.parent / "train.json").read_text())
        index = later.get((arm, scale, int(seed.removeprefix("seed-"))), 1)
        finished = json.loads(done.read_text())["finished"]
        rows.append((first["started"], finished, index, train["tokens"] / train["tokens_per_s"]))
    rounds = sorted({row[2] for row in rows})
    ends = {k: max(r[1] for r in rows if r[2] == k) for k in rounds}
    starts = {k: min(r[0] for r in rows if r[2] == k) for k in rounds}
    gaps = [starts[k] - ends[k - 1] for k in rounds[1:]]
    return {
        "audit_start_s": min(r[0] for r in rows) - started,
        "run_s": sum(r[1] - r[0] for r in rows) / len(rows),
        "train_s": sum(r[3] for r in rows) / len(rows),
        "rounds": len(rounds),
        "judgement_s": sum(gaps) / max(len(gaps), 1),
        "tail_s": ended - max(r[1] for r in rows),
        "round_wall_s": [round(ends[k] - starts[k], 1) for k in rounds],
    }


def compared_parts(
    summary: dict[str, Any], loop: dict[str, Any], spent: dict[str, Any]
) -> dict[str, Any]:
    """Each part of the estimate beside what the run spent on it (`spent_parts`)."""
    seconds = [run["seconds"] for run in summary["runs"]]
    train = [run["train_seconds"] for run in summary["runs"]]
    planned = {
        "audit_start_s": summary["audit_start_s"],
        "run_s": sum(seconds) / len(seconds),
        "train_s": sum(train) / len(train),
        "rounds": loop.get("expected_rounds"),
        "judgement_s": summary["round_overhead_s"],
        "tail_s": summary.get("finish_s"),
        "approx_runs": summary.get("approx_runs"),
        "overheads_approx": summary.get("overheads_approx"),
    }
    out: dict[str, Any] = {"spent": {k: _round(v) for k, v in spent.items()}}
    out["planned"] = {k: _round(v) for k, v in planned.items()}
    out["spent_over_planned"] = {
        k: round(spent[k] / v, 3)
        for k, v in planned.items()
        if k in spent and isinstance(v, float | int) and not isinstance(v, bool) and v
    }
    return out


def _round(value: Any) -> Any:
    return round(value, 2) if isinstance(value, float) else value


def planned_loop(summary: dict[str, Any]) -> dict[str, Any]:
    """The estimate compared: the sequential loop's (with the effects it assumed), or a fixed
    design's wall and runs in the same fields."""
    if "sequential" in summary:
        estimate = summary["sequential"]
        return estimate["sequential"] | {"effects": estimate["assumed"]}
    runs = summary["total_runs"]
    return {
        "wall_s": summary["estimated_wall_s"],
        "wall_range_s": summary["estimated_wall_range_s"],
        "expected_runs": runs,
        "runs_range": [runs, runs],
        "effects": "fixed design",
    }


def train_ratios(summary: dict[str, Any], audit_dir: Path) -> dict[str, float]:
    """Per arm: its runs' measured training seconds (tokens over the trainer's tokens/s, in
    each run's train.json) over `plan`'s `train_seconds` for them, summed over its runs and
    scales: where one arm's estimate misses (softpick's, issue 45)."""
    planned = {run["path"]: run["train_seconds"] for run in summary["runs"]}
    sums: dict[str, list[float]] = {}
    for result in sorted(audit_dir.glob("*/*/seed-*/train.json")):
        path = str(result.parent.relative_to(audit_dir))
        arm = path.split("/")[0]
        done = json.loads(result.read_text())
        estimate = planned.get(path) or planned.get(path.rsplit("/", 1)[0] + "/seed-0")
        if estimate and done["tokens_per_s"]:
            pair = sums.setdefault(arm, [0.0, 0.0])
            pair[0] += done["tokens"] / done["tokens_per_s"]
            pair[1] += estimate
    return {arm: round(measured / planned_s, 3) for arm, (measured, planned_s) in sums.items()}


def condition(
    name: str, files: dict[str, Path], work: Path, env: dict[str, str], busy: int, out: Path
) -> None:
    """Every audit planned and run beside `busy` spinning processes (started and ended here),
    each result written into `out` as it comes (a long run stopped halfway keeps its part)."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
    try:
        time.sleep(2.0 if busy else 0.0)  # let the load settle before the plan measures it
        record(out, name, {"busy_processes": busy, "uptime_before": uptime()})
        for audit, path in files.items():
            runs_dir = work / name / audit
            shutil.rmtree(runs_dir, ignore_errors=True)  # fresh: a kept --work ran it before
            result = measure(path, runs_dir, env)
            record(out, name, {audit: result})
            print(name, audit, result, flush=True)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def record(out: Path, name: str, values: dict[str, object]) -> None:
    """Merge `values` into the condition `name` of the JSON at `out`."""
    results = json.loads(out.read_text()) if out.is_file() else {}
    results.setdefault(name, {}).update(values)
    out.write_text(json.dumps(results, indent=1) + "\n")


def first_plan(
    work: Path, busy: int, out: Path, loop: bool = True, budget: float | None = None
) -> None:
    """Issue 57's must-show 1, written into `out` step by step (without `loop`, the starter's
    first plan alone; with `budget`, the 2-arm audit planned with that `--probe-budget`: 0
    estimates all of it from the reference step, as a first plan does when the load leaves no
    probe room)."""
    env = {**os.environ, "ARCHAUDIT_CACHE": str(work / "cache"), "PYTHONPATH": str(ROOT / "src")}
    shutil.rmtree(work / "cache", ignore_errors=True)  # a first plan: nothing measured yet
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
    try:
        time.sleep(30.0)  # the load average climbs toward the busy processes
        record(out, "first_plan", {"busy_processes": busy, "uptime_before": uptime()})
        starter = work / "my_audit.toml"
        cli(["init", str(starter), "--arms", "suite:audit2026", "--force"], env)
        shown, wall = cli(["plan", str(starter), "--runs-dir", str(work / "runs")], env)
        approx = re.search(r"≈: (\d+) of (\d+) runs", " ".join(shown.split()))
        record(out, "first_plan", {
            "plan_s": round(wall, 1),
            "approx_runs": approx.group(0) if approx else "none",
            "stats_entries_written": len(list((work / "cache" / "stats").glob("*.json"))),
            "uptime_after": uptime(),
        })  # fmt: skip
        print("first plan", round(wall, 1), "s", flush=True)
        if not loop:
            return
        files = audit_files(work, quick=True)
        runs_dir = work / "loaded" / "two_arms"
        shutil.rmtree(runs_dir, ignore_errors=True)
        result = measure(files["two_arms"], runs_dir, env, budget)
        record(out, "first_plan", {"two_arms": result, "probe_budget": budget})
        print("two_arms", result, flush=True)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="an eighth of the demo's tokens")
    parser.add_argument("--load", type=int, default=4, help="busy processes in the loaded run")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "plan_load.json")
    parser.add_argument("--audits", default="demo_small,two_arms", help="which, comma-separated")
    parser.add_argument("--conditions", default="idle,loaded", help="which, comma-separated")
    parser.add_argument(
        "--work", type=Path, help="a folder to keep (its probe cache is reused) [a temporary one]"
    )
    parser.add_argument(
        "--examples",
        action="store_true",
        help="moe-tiny and init's starter, reduced (issue 45), idle; into plan_load-examples.json",
    )
    parser.add_argument(
        "--first-plan",
        action="store_true",
        help="issue 57: the starter's first plan and a 2-arm loop under --load (default 8)",
    )
    parser.add_argument(
        "--no-loop", action="store_true", help="with --first-plan: the starter's plan alone"
    )
    parser.add_argument(
        "--probe-budget",
        type=float,
        help="with --first-plan: the 2-arm audit's plan --probe-budget (0: all from the reference)",
    )
    args = parser.parse_args()
    if args.first_plan:
        out = args.out
        if out == parser.get_default("out"):
            out = ROOT / "benchmarks" / "plan_load-first.json"
        load = 8 if args.load == parser.get_default("load") else args.load
        with tempfile.TemporaryDirectory(prefix="plan_load-") as tmp:
            work = args.work or Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            out.unlink(missing_ok=True)
            record(out, "machine", {"cpus": os.cpu_count()})
            first_plan(work, load, out, loop=not args.no_loop, budget=args.probe_budget)
        print(f"wrote {out}")
        return
    if args.examples:
        args.audits = ",".join(EXAMPLE_DIVISORS)
        if args.conditions == parser.get_default("conditions"):
            args.conditions = "idle"
        if args.out == parser.get_default("out"):
            args.out = ROOT / "benchmarks" / "plan_load-examples.json"
    with tempfile.TemporaryDirectory(prefix="plan_load-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ARCHAUDIT_CACHE": str(work / "cache")}
        env["PYTHONPATH"] = str(ROOT / "src")
        files = audit_files(work, args.quick) | example_files(work, args.quick)
        chosen = {name: files[name] for name in args.audits.split(",")}
        args.out.unlink(missing_ok=True)  # a fresh record (each result is merged in as it comes)
        record(args.out, "machine", {"quick": args.quick, "cpus": os.cpu_count()})
        for name in args.conditions.split(","):
            busy = args.load if name == "loaded" else 0
            condition(name, chosen, work, env, busy, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
