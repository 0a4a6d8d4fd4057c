"""How long `archaudit report` takes for a 20-arm, 2-scale results CSV (goal: ≤ 10 s).

The CSV: the baseline with 3 seeds and 20 arms with 2 seeds each, from 5 families, at two
scales, with val_loss and downstream_avg per run; every arm has a random true effect. Timed, as
wall-clock and as CPU time (what the report costs on an idle machine; the wall clock of a shared
machine also counts other people's work): `write_report` to HTML and its Markdown twin (every
analysis, every figure) in this process after imports, and the whole `archaudit report` command
in a fresh process.

    .venv/bin/python benchmarks/report_speed.py
"""

from __future__ import annotations

import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from archaudit.report import write_report

ARMS, SCALES, SEEDS, BASELINE_SEEDS = 20, ("d48", "d64"), 2, 3
FAMILIES = ("attention-output", "norm", "residual", "mlp", "position")
GOAL_S = 10.0


def write_csv(path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    effects = rng.normal(0.0, 0.02, ARMS)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(("arm", "scale", "seed", "metric", "value", "family"))
        for scale in SCALES:
            for i in range(ARMS + 1):
                arm, effect = ("baseline", 0.0) if i == 0 else (f"arm{i:02d}", effects[i - 1])
                family = "baseline" if i == 0 else FAMILIES[i % len(FAMILIES)]
                for k in range(BASELINE_SEEDS if i == 0 else SEEDS):
                    loss = float(3.0 + effect + rng.normal(0.0, 0.01))
                    acc = float(0.5 - 2 * effect + rng.normal(0.0, 0.01))
                    writer.writerow((arm, scale, k, "val_loss", repr(loss), family))
                    writer.writerow((arm, scale, k, "downstream_avg", repr(acc), family))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "results.csv"
        write_csv(source)
        start, cpu = time.perf_counter(), time.process_time()
        html = write_report(source, Path(tmp) / "report.html", markdown=Path(tmp) / "report.md")
        in_process = time.perf_counter() - start, time.process_time() - cpu
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "archaudit.cli", "report", str(source), "--out", str(html)],
            check=True,
            capture_output=True,
        )
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        command = time.perf_counter() - start, child.ru_utime + child.ru_stime
        size = html.stat().st_size
    print(f"report for {ARMS} arms × {len(SCALES)} scales ({size / 1e6:.2f} MB of HTML), load")
    print(f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; goal ≤ {GOAL_S} s:")
    for name, (wall, cpu) in (
        ("write_report (HTML + Markdown), after imports", in_process),
        ("`archaudit report` in a fresh process", command),
    ):
        print(f"  {name:<46} {wall:6.2f} s wall, {cpu:6.2f} s CPU")


if __name__ == "__main__":
    main()
