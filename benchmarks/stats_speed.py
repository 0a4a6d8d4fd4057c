"""How long `archaudit stats` takes from a 10,000-row CSV to JSON verdicts.

The CSV: 100 arms × 2 scales × 5 seeds × 10 metrics (each arm with a random true effect).
Times: reading and validating the CSV, one judgement to JSON with the design's measured error
rate (what `archaudit stats SOURCE --metric M --scale S --json` does after start-up), first with
an empty design cache (the null simulation runs: 4,000 audits of 99 arms × 5 seeds) and then
with the cached rate, and all 20 (metric, scale) judgements. The goal: CSV to JSON in <= 1 s.

    .venv/bin/python benchmarks/stats_speed.py
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from archaudit.stats import judge, load_table
from archaudit.stats.choices.options import JudgeOptions

ARMS, SCALES, SEEDS, METRICS = 100, ("d6", "d12"), 5, 10


def write_csv(path: Path, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    effects = rng.normal(0.0, 1.0, ARMS) * (rng.random(ARMS) < 0.2)
    rows = 0
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["arm", "scale", "seed", "metric", "value", "family"])
        for index in range(ARMS):
            arm = "baseline" if index == 0 else f"arm{index:03d}"
            for scale in SCALES:
                for seed in range(SEEDS):
                    for metric in range(METRICS):
                        value = 0.5 + 0.01 * (effects[index] + rng.normal())
                        writer.writerow(
                            [
                                arm,
                                scale,
                                seed,
                                f"metric{metric}",
                                f"{value:.6f}",
                                ("residual", "norm", "attention-output")[index % 3],
                            ]
                        )
                        rows += 1
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        os.environ["ARCHAUDIT_CACHE"] = str(Path(folder) / "cache")  # start with no cached rate
        path = Path(folder) / "results.csv"
        rows = write_csv(path)
        start = time.perf_counter()
        table = load_table(path)
        loaded = time.perf_counter()
        cold = judge(table, "metric0", JudgeOptions(scale="d6")).to_json()
        judged = time.perf_counter()
        warm = judge(load_table(path), "metric1", JudgeOptions(scale="d6")).to_json()
        cached = time.perf_counter()
        every = [
            judge(table, f"metric{m}", JudgeOptions(scale=scale)).to_dict()
            for m in range(METRICS)
            for scale in SCALES
        ]
        done = time.perf_counter()
    verdicts = json.loads(cold)
    print(f"rows: {rows}, arms judged per metric and scale: {len(verdicts['arms'])}")
    print(
        f"design: {verdicts['design']['description']}; measured family-wise error rate "
        f"{verdicts['design_fwer']:.4f} over {verdicts['design']['audits']} null audits"
    )
    print(f"load + validate CSV:                         {loaded - start:.3f} s")
    print(f"one judgement to JSON, design simulated:     {judged - loaded:.3f} s")
    print(f"CSV to JSON verdicts, design simulated:      {judged - start:.3f} s")
    print(f"CSV to JSON verdicts, design rate cached:    {cached - judged:.3f} s")
    assert json.loads(warm)["design_fwer"] == verdicts["design_fwer"]
    print(f"all {len(every)} (metric, scale) judgements (cached): {done - cached:.3f} s")


if __name__ == "__main__":
    main()
