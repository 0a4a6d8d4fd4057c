"""The stability verdict's family-wise error rate under the null, measured by simulation.

Null audits: 4 arms (the baseline and 3 copies of it under other seeds) swept over 6 rates with
2 seeds each; the loss at each rate is the baseline's curve plus seed noise, and the runs at the
top two rates break with probability 1/2. Prints the share of audits in which any arm got a
verdict other than within-noise (the FWER Holm controls at α = 0.05) and its standard error.

    python benchmarks/stress_calibration.py [--trials 1000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from archaudit.stats.analyses.stability import WITHIN_NOISE, Sweep, SweepRun, judge_stability

LRS = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1)
CURVE = (2.0, 1.0, 1.1, 1.4, 2.2, 3.5)


def null_audit(rng: np.random.Generator, arms: int = 4, seeds: int = 2) -> dict[str, Sweep]:
    sweeps = {}
    for a in range(arms):
        name = "baseline" if a == 0 else f"arm{a}"
        runs = []
        for lr, loss in zip(LRS, CURVE, strict=True):
            for s in range(seeds):
                broke = lr >= 1e-1 and rng.random() < 0.5
                value = None if broke else loss + rng.normal(0, 0.1)
                runs.append(SweepRun(name, lr, s, 5.5, value, not broke))
        sweeps[name] = Sweep.of(name, runs)
    return sweeps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    hits = 0
    for _ in range(args.trials):
        verdicts = judge_stability(null_audit(rng), "baseline", permutations=499)
        hits += any(v.verdict != WITHIN_NOISE for v in verdicts)
    rate = hits / args.trials
    se = math.sqrt(rate * (1 - rate) / args.trials)
    print(f"null audits: {args.trials}; FWER of the stability verdict: {rate:.3f} ± {se:.3f}")


if __name__ == "__main__":
    main()
