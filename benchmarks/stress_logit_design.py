"""The logit test's power over candidate designs, from stored pilots (issue 54, z_loss_logits).

`archaudit stress --plan --pilot` models the pilot's own grid at the pilot's effect. Choosing a
design asks two more things: the power on a *subset* of the pilot's rates (a grid that stops
earlier), and the power for a *fraction* of the pilot's effect (a pilot's effect is inflated
when it was the reason to look). Both come from the same model (`stress_power.logit_power`):

- a design keeps the pilot's runs at its rates only (`logit_strata` then weighs the upper half
  of those rates, as the stress test would on that grid; a lower-half rate the pilots lack is
  filled with their lowest rate's runs, as it weighs 0);
- a fraction f moves each of the arm's runs at a rate towards the baseline's mean there,
  value − (1 − f) × (arm mean − baseline mean), for both logit measures (the attention logit on
  its log scale), keeping the seed spread: the fitted effect is f × the pilot's at every rate.

Several pilots may be pooled for planning (their runs taken together, rate by rate).

    nice -n 10 python benchmarks/stress_logit_design.py --pilot A.json [B.json] \
        --design "1e-3,3e-3,9e-3,0.03,0.09,0.3" --design "3e-3,9e-3,0.03,0.09" \
        --fraction 1 --fraction 0.5 --seeds 3 4 6 8 --out F.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from archaudit.audit.grid.plan import BASELINE
from archaudit.audit.stability.stress_result import read_result
from archaudit.stats.analyses.logits import LogitRun
from archaudit.stats.analyses.stress_power import logit_power


def pilot_runs(paths: Sequence[Path]) -> dict[str, list[LogitRun]]:
    """The logit runs of every pilot, per arm, pooled."""
    out: dict[str, list[LogitRun]] = {}
    for path in paths:
        for arm, runs in read_result(path).logit_pilot().items():
            out.setdefault(arm, []).extend(runs)
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6)


class _Run(Protocol):
    arm: str
    lr: float


R = TypeVar("R", bound=_Run)


def restrict(runs: dict[str, list[R]], rates: Sequence[float]) -> dict[str, list[R]]:
    """The runs at the design's rates only. A rate of the lower half the pilots lack is filled
    with the runs at the pilots' lowest rate, relabelled: the logit test weighs the lower half
    0, so only the number of rates (which sets the upper half) matters there; a rate of the
    upper half the pilots lack is an error."""
    have = sorted({r.lr for rs in runs.values() for r in rs})
    reference = statistics.median_low(sorted(rates))
    out: dict[str, list[R]] = {a: [] for a in runs}
    for lr in rates:
        source = next((h for h in have if _close(h, lr)), None)
        if source is None and lr > reference:
            raise SystemExit(f"rate {lr} of the upper half is not in the pilots (they have {have})")
        source = have[0] if source is None else source
        for arm, rs in runs.items():
            out[arm] += [dataclasses.replace(r, lr=lr) for r in rs if r.lr == source]
    return out


def shrink(runs: dict[str, list[LogitRun]], fraction: float) -> dict[str, list[LogitRun]]:
    """Every arm's runs moved towards the baseline's mean at their rate, leaving `fraction` of
    the pilot's effect on |log Z| and on the log of the largest attention logit."""
    base = runs[BASELINE]
    out = {BASELINE: list(base)}
    for arm, rs in runs.items():
        if arm == BASELINE:
            continue
        moved = []
        for r in rs:
            same = [x for x in rs if x.lr == r.lr and x.stable]
            ref = [x for x in base if x.lr == r.lr and x.stable]
            if not r.stable or not same or not ref:
                moved.append(r)
                continue
            gap_z = statistics.fmean(x.log_z for x in same) - statistics.fmean(x.log_z for x in ref)
            gap_a = statistics.fmean(math.log(x.attn_logit) for x in same) - statistics.fmean(
                math.log(x.attn_logit) for x in ref
            )
            moved.append(
                dataclasses.replace(
                    r,
                    log_z=r.log_z - (1 - fraction) * gap_z,
                    attn_logit=math.exp(math.log(r.attn_logit) - (1 - fraction) * gap_a),
                )
            )
        out[arm] = moved
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pilot", type=Path, nargs="+", required=True)
    parser.add_argument("--design", action="append", required=True, help="comma-separated rates")
    parser.add_argument("--fraction", type=float, action="append", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", required=True)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    pooled = pilot_runs(args.pilot)
    rows = []
    for design in args.design:
        rates = [float(v) for v in design.split(",")]
        for fraction in args.fraction:
            runs = shrink(restrict(pooled, rates), fraction)
            for seeds in args.seeds:
                for p in logit_power(runs, BASELINE, seeds, trials=args.trials):
                    row = {
                        "rates": rates,
                        "fraction": fraction,
                        "seeds": seeds,
                        "arm": p.arm,
                        "direction": p.direction,
                        "power": p.power,
                        "runs": 2 * len(rates) * seeds,
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    report = {"pilots": [str(p) for p in args.pilot], "trials": args.trials, "rows": rows}
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
