"""The depth stress's error rate on null audits: every arm the same arm (issue 54), for the
depth test (`stability.judge_depth`) and the depth-sensitivity test
(`depth_sensitivity.judge_depth_sensitivity`). The rate, logit and group tests' null rates are
`stress_null.py`'s.

1. **simulated**: a stored stress test's baseline runs of the depth stress (its depth rates at
   every depth, the sweep's included) are fitted stratum by stratum
   (`stats.analyses.stress_power.fit`), and `--trials` null audits draw the baseline and
   `--arms` more arms from the same fit at `--seeds` seeds per stratum. The share of audits
   with any declared verdict (each test Holm over the arms) is the family-wise error, with its
   Clopper–Pearson 95% upper bound.
2. **real runs**: the baseline's depth-stress runs of one or more stored stress tests on
   distinct seeds of the same audit (`--real A [B ...]`); every split of its seeds into two
   halves (`--split-seeds` of them, the first seeds when there are more) judged as an arm
   against the baseline (the splits share runs: a check, not a bound).

    nice -n 10 python benchmarks/stress_null_depth.py --pilot STRESS_JSON [--real A ...] \
        --seeds 12 --arms 1 --out F.json
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import stats as sps

from archaudit.audit.stability.stress_result import read_result
from archaudit.stats.analyses.depth_sensitivity import judge_depth_sensitivity
from archaudit.stats.analyses.stability import SweepRun, judge_depth
from archaudit.stats.analyses.stress_power import fit, simulate_runs

ALPHA = 0.05
TESTS = ("depth", "depth-loss")


def _bound(hits: int, trials: int) -> float:
    """Clopper–Pearson one-sided 95% upper bound of a rate seen `hits` times in `trials`."""
    return 1.0 if hits == trials else float(sps.beta.ppf(0.95, hits + 1, trials - hits))


def _declared(runs: dict[str, Sequence[SweepRun]], permutations: int) -> dict[str, bool]:
    """Whether each test declared any arm (Holm over the arms, as the stress test judges)."""
    depth = judge_depth(runs, "baseline", alpha=ALPHA, permutations=permutations)
    loss = judge_depth_sensitivity(runs, "baseline", alpha=ALPHA, permutations=permutations)
    return {
        "depth": any(v.verdict.sign for v in depth),
        "depth-loss": any(v.verdict.sign for v in loss),
    }


def simulated(
    base: Sequence[SweepRun], arms: int, seeds: int, trials: int, permutations: int
) -> dict[str, object]:
    model = fit(base, base)
    rng = np.random.default_rng(2026)
    names = ["baseline", *(f"a{i}" for i in range(arms))]
    hits = dict.fromkeys(TESTS, 0)
    for _ in range(trials):
        runs = {a: simulate_runs(a, model, seeds, rng) for a in names}
        for test, declared in _declared(runs, permutations).items():
            hits[test] += declared
    return {
        "arms_besides_baseline": arms,
        "seeds": seeds,
        "trials": trials,
        "permutations": permutations,
        "strata": sorted(model),
        **{
            test: {"fwer": n / trials, "upper_95": round(_bound(n, trials), 4)}
            for test, n in hits.items()
        },
    }


def real(base: Sequence[SweepRun], split_seeds: int, permutations: int) -> dict[str, object]:
    """Every split of the first `split_seeds` seeds into two halves, one half as an arm."""
    seeds = sorted({r.seed for r in base})[:split_seeds]
    declared = dict.fromkeys(TESTS, 0)
    splits = [c for c in itertools.combinations(seeds, len(seeds) // 2) if seeds[0] in c]
    for half in splits:
        arm = [dataclasses.replace(r, arm="a") for r in base if r.seed in half]
        rest = [r for r in base if r.seed in seeds and r.seed not in half]
        for test, hit in _declared({"baseline": rest, "a": arm}, permutations).items():
            declared[test] += hit
    return {
        "seeds": seeds,
        "splits": len(splits),
        "declared": declared,
        "share": {t: n / len(splits) for t, n in declared.items()},
    }


def _baseline(path: str) -> list[SweepRun]:
    return [r for r in read_result(Path(path)).depth_runs if r.arm == "baseline"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pilot", required=True, help="a stored stress.json with its runs")
    parser.add_argument("--real", nargs="+", help="stress.json of the same audit, distinct seeds")
    parser.add_argument("--arms", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--split-seeds", type=int, default=12)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out: dict[str, object] = {
        "pilot": args.pilot,
        "alpha": ALPHA,
        "simulated": simulated(
            _baseline(args.pilot), args.arms, args.seeds, args.trials, args.permutations
        ),
    }
    if args.real:
        base = [r for path in args.real for r in _baseline(path)]
        out["real"] = {"from": args.real, **real(base, args.split_seeds, args.permutations)}
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
