"""A stress test's power curve from a pilot: each arm's power at several seed counts and at
fractions of the pilot's effect (`stats.analyses.stress_power.power`, `effect`: every arm
shrunk towards the baseline at every stratum), to plan a confirming run for less than the
pilot showed (winner's curse). The plan's own lines (`stress --plan --pilot`) are the curve at
fraction 1.

    nice -n 10 python benchmarks/stress_power_curve.py --pilot STRESS_JSON --test depth-loss \
        --seeds 3 4 6 8 10 12 --effects 1 0.5 --out F.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from archaudit.audit.stability.stress_result import read_result
from archaudit.stats.analyses.stress_power import TESTS, power

DEPTH_TESTS = ("depth", "depth-loss")
"""The tests fitted to the pilot's depth-stress runs (the others: to its rate sweep)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pilot", required=True, help="a stored stress.json with its runs")
    parser.add_argument("--test", choices=sorted(TESTS), default="depth-loss")
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 4, 6, 8, 10, 12])
    parser.add_argument("--effects", type=float, nargs="+", default=[1.0, 0.5])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    pilot = read_result(Path(args.pilot)).pilot(depth=args.test in DEPTH_TESTS)
    curve = [
        {"effect": effect, "seeds": seeds, "arm": p.arm, "power": p.power, "trials": p.trials}
        for effect in args.effects
        for seeds in args.seeds
        for p in power(
            pilot,
            "baseline",
            seeds,
            test=args.test,
            trials=args.trials,
            permutations=args.permutations,
            effect=effect,
        )
    ]
    out = {"pilot": args.pilot, "test": args.test, "curve": curve}
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    for row in curve:
        print(f"effect {row['effect']:g}, {row['seeds']} seeds, {row['arm']}: {row['power']:.3f}")


if __name__ == "__main__":
    main()
