"""The stress design's error rate on null audits: every arm the same arm (issue 54).

Two nulls, each judged by the declared tests exactly as a stress test judges trained runs:

1. **simulated**: a stored stress test's baseline runs are fitted stratum by stratum
   (`stats.analyses.stress_power.fit`; for the logit test, a normal per rate fitted to the
   baseline's largest attention logit and final |log Z|), and `--trials` null audits draw
   the baseline and `--arms` more arms from the same fit, at `--seeds` seeds per rate. The
   share of audits with any declared verdict (the rate test and the logit test, each Holm over
   the arms; the group test of the first half of the arms against the rest, one test, with
   two arms or more) is the family-wise error, with its Clopper–Pearson 95% upper bound.
2. **real runs**: the baseline trained on 2 × `seeds` seeds (two stored stress tests on fresh
   seeds of the same audit: `--real A B`), every split of its seeds into two halves judged as
   an arm against the baseline (the splits share runs, so they are not independent: a check,
   not a bound).

    nice -n 10 python benchmarks/stress_null.py --pilot STRESS_JSON [--real A B] --out F.json

`--rates` simulates another grid from the same pilot (`stress_logit_design.restrict`: the
pilot's runs at those rates; a lower-half rate it lacks filled with its lowest rate's runs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import stats as sps

from archaudit.audit.stability.stress_result import StressResult, logit_run, read_result
from archaudit.stats.analyses.fragility import fragility_test
from archaudit.stats.analyses.logits import LOGIT_MEASURES, LogitRun, logit_strata
from archaudit.stats.analyses.stability import Sweep, SweepRun, group_strata, rate_strata
from archaudit.stats.analyses.stress_power import fit, simulate_runs
from archaudit.stats.inference.corrections import adjust_pvalues
from stress_logit_design import restrict

ALPHA = 0.05


def _logit_runs(result: StressResult, arm: str) -> list[LogitRun]:
    traces = {(t.arm, t.lr, t.seed, t.layers): t for t in result.traces}
    return [
        logit_run(r, traces[(r.arm, r.lr, r.seed, r.layers)])
        for r in result.sweep_runs
        if r.arm == arm
    ]


def _logit_model(runs: Sequence[LogitRun]) -> dict[float, tuple[float, float, float, float]]:
    """Per rate: mean and SD of the largest attention logit (on a log scale) and |log Z|."""
    out = {}
    for lr in sorted({r.lr for r in runs}):
        at = [r for r in runs if r.lr == lr and r.stable]
        attn = np.log([r.attn_logit for r in at])
        logz = np.array([r.log_z for r in at])
        out[lr] = (attn.mean(), attn.std(ddof=1), logz.mean(), logz.std(ddof=1))
    return out


def _draw_logits(
    arm: str,
    model: dict[float, tuple[float, float, float, float]],
    seeds: int,
    rng: np.random.Generator,
) -> list[LogitRun]:
    return [
        LogitRun(arm, lr, s, True, math.exp(rng.normal(a, sa)), abs(rng.normal(z, sz)))
        for lr, (a, sa, z, sz) in model.items()
        for s in range(seeds)
    ]


def _holm_any(pvalues: Sequence[float]) -> bool:
    return bool(np.any(np.asarray(adjust_pvalues(pvalues, "holm")) < ALPHA))


def _bound(hits: int, trials: int) -> float:
    """Clopper–Pearson one-sided 95% upper bound of a rate seen `hits` times in `trials`."""
    return 1.0 if hits == trials else float(sps.beta.ppf(0.95, hits + 1, trials - hits))


def simulated(
    pilot: StressResult,
    arms: int,
    seeds: int,
    trials: int,
    permutations: int,
    rates: Sequence[float] = (),
) -> dict[str, object]:
    base = [r for r in pilot.sweep_runs if r.arm == "baseline"]
    logit_base = _logit_runs(pilot, "baseline")
    if rates:
        base = restrict({"baseline": base}, rates)["baseline"]
        logit_base = restrict({"baseline": logit_base}, rates)["baseline"]
    model = fit(base, base)
    logits = _logit_model(logit_base)
    rng = np.random.default_rng(2026)
    names = [f"a{i}" for i in range(arms)]
    hits = {"rate": 0, "logit": 0, **({"group": 0} if arms > 1 else {})}  # group: 2 arms up
    for _ in range(trials):
        runs = {a: simulate_runs(a, model, seeds, rng) for a in ["baseline", *names]}
        sweeps = {a: Sweep.of(a, r) for a, r in runs.items()}
        p_rate = [
            fragility_test(rate_strata(sweeps[a], sweeps["baseline"]), permutations).p
            for a in names
        ]
        drawn = {a: _draw_logits(a, logits, seeds, rng) for a in ["baseline", *names]}
        p_logit = [
            fragility_test(
                logit_strata(drawn[a], drawn["baseline"]) or [],
                permutations,
                measures=LOGIT_MEASURES,
            ).p
            for a in names
        ]
        hits["rate"] += _holm_any(p_rate)
        hits["logit"] += _holm_any(p_logit)
        if "group" in hits:
            half = arms // 2
            strata = group_strata(
                [r for a in names[:half] for r in runs[a]],
                [r for a in names[half:] for r in runs[a]],
            )
            hits["group"] += (fragility_test(strata, permutations).p if strata else 1.0) < ALPHA
    return {
        "arms_besides_baseline": arms,
        "rates": sorted({r.lr for r in base}),
        "seeds": seeds,
        "trials": trials,
        "permutations": permutations,
        **{
            test: {"fwer": n / trials, "upper_95": round(_bound(n, trials), 4)}
            for test, n in hits.items()
        },
    }


def real(first: StressResult, second: StressResult, permutations: int) -> dict[str, object]:
    """Every split of the baseline's 2 × seeds seeds into two halves, one half as an arm."""
    runs = [r for res in (first, second) for r in res.sweep_runs if r.arm == "baseline"]
    logits = [*_logit_runs(first, "baseline"), *_logit_runs(second, "baseline")]
    seeds = sorted({r.seed for r in runs})
    declared = {"rate": 0, "logit": 0}
    splits = [c for c in itertools.combinations(seeds, len(seeds) // 2) if seeds[0] in c]
    for half in splits:
        a = Sweep.of("a", [_relabel(r, "a") for r in runs if r.seed in half])
        b = Sweep.of("baseline", [r for r in runs if r.seed not in half])
        declared["rate"] += fragility_test(rate_strata(a, b), permutations).p < ALPHA
        la = [r for r in logits if r.seed in half]
        lb = [r for r in logits if r.seed not in half]
        strata = logit_strata(la, lb) or []
        declared["logit"] += fragility_test(strata, permutations, measures=LOGIT_MEASURES).p < ALPHA
    return {"seeds": seeds, "splits": len(splits), "declared": declared}


def _relabel(run: SweepRun, arm: str) -> SweepRun:
    from dataclasses import replace

    return replace(run, arm=arm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pilot", required=True, help="a stored stress.json with its runs")
    parser.add_argument("--real", nargs=2, help="two stress.json of the same audit, fresh seeds")
    parser.add_argument("--arms", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--rates", type=float, nargs="+", default=(), help="the grid to simulate")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    pilot = read_result(Path(args.pilot))
    out: dict[str, object] = {
        "pilot": args.pilot,
        "alpha": ALPHA,
        "simulated": simulated(
            pilot, args.arms, args.seeds, args.trials, args.permutations, args.rates
        ),
    }
    if args.real:
        first, second = (read_result(Path(p)) for p in args.real)
        out["real"] = real(first, second, args.permutations)
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
