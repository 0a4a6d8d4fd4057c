"""The demo's start and end without its runs: a finished demo resumed, this checkout against
another, alternating, in one run of this script (issue 45; docs/benchmarks/demo-history.md).

    python benchmarks/demo_resumed.py --demo DIR [--against /path/to/other/checkout/src]
        [--rounds 3] [--json benchmarks/demo_resumed.json]

DIR is a finished `archaudit demo` runs folder; it is copied once to a temporary folder (never
changed) and both checkouts resume that copy in turn:

- resumed: `archaudit demo --runs-dir COPY --quiet` (no run is left: the CLI, the plan, the
  loop's judging, the verdict tables and the report), its wall and its CPU with its children's;
- end: what follows the last run in one process, the verdict tables' findings and the report
  drawn on every core (a checkout with `report_findings` computes the record once and hands it
  to the report; an older one computes the tables' record and the report its own).

Each line gives the load average at its start: timings taken while other jobs run say so.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"

END = """
import os, sys, time
from pathlib import Path
import archaudit.audit.results.findings as F
from archaudit.audit.launcher.executors import cpu_cores
from archaudit.report import write_report
audit, page = Path(sys.argv[1]), Path(sys.argv[2])
wall, cpu = time.perf_counter(), os.times()
if hasattr(F, "report_findings"):
    write_report(audit, page, workers=cpu_cores(), found=F.report_findings(audit))
else:
    F.findings(audit, asked=F.VERDICTS_ONLY)
    write_report(audit, page, workers=cpu_cores())
used = os.times()
print(time.perf_counter() - wall, sum(used[:4]) - sum(cpu[:4]))
"""


def timed(command: list[str], src: Path) -> tuple[float, float]:
    """Wall and CPU (with the children it waited for) of one command under PYTHONPATH=src."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise SystemExit(f"{' '.join(command)} failed under {src}: exit status {status}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def end_phase(src: Path, audit: Path, page: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", END, str(audit), str(page)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, required=True, help="A finished demo's runs folder.")
    parser.add_argument("--against", type=Path, help="The other checkout's src folder.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="Store the measurements here.")
    args = parser.parse_args()
    checkouts = {"this": HERE, **({"against": args.against.resolve()} if args.against else {})}
    samples: dict[str, dict[str, list[list[float]]]] = {
        name: {"resumed": [], "end": []} for name in checkouts
    }
    with tempfile.TemporaryDirectory(prefix="demo-resumed-") as folder:
        copy = Path(folder) / "runs"
        shutil.copytree(args.demo, copy)
        demo = [sys.executable, "-m", "archaudit", "demo", "--runs-dir", str(copy), "--quiet"]
        for round_ in range(args.rounds):
            for name, src in checkouts.items():
                for part in ("resumed", "end"):
                    load = os.getloadavg()[0]
                    page = Path(folder) / "end.html"
                    wall, cpu = (
                        timed(demo, src)
                        if part == "resumed"
                        else end_phase(src, copy / "demo", page)
                    )
                    samples[name][part].append([wall, cpu, load])
                    print(f"round {round_ + 1} {name:7} {part:7} {wall:6.2f} s wall "
                          f"{cpu:6.2f} s CPU (load {load:.2f})", flush=True)  # fmt: skip
    medians = {
        name: {
            part: {"wall": statistics.median(s[0] for s in runs),
                   "cpu": statistics.median(s[1] for s in runs)}
            for part, runs in parts.items()
        }
        for name, parts in samples.items()
    }  # fmt: skip
    print(json.dumps(medians, indent=1))
    if args.json:
        # Named, not located: absolute paths would tie the record to this machine.
        record = {
            "checkouts": {"this": "src", "against": "--against's src"},
            "demo": args.demo.name,
        }
        args.json.write_text(
            json.dumps({**record, "medians": medians, "samples": samples}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()
