"""Wortsman et al. 2023's logit measures as a declared test (docs/stability.md, "Logit test").

Wortsman et al. (arXiv 2309.14322) trace two small-scale instabilities to logits that grow
with the learning rate: **attention-logit growth** (§3.1: the largest pre-softmax attention
logit; qk-layernorm stops it) and **output-logit divergence** (§3.2: log Z, the log of the
softmax normaliser, drifts away from 0; z-loss holds it there). The stress test logs both at
every validation. Each run is scored on its largest attention logit over the run and its
|log Z| at the last validation (+∞ for a run that broke), and each arm is compared with the
baseline by the same stratified rank contrast as the primary test (`fragility.fragility_test`
with these two measures; the upper half of the rate grid weighing, exact under the null "at
every high rate the arm's runs and the baseline's are exchangeable"). One test per arm forms
a family of its own, corrected by Holm: `more-fragile` when the arm's logits rank larger,
`more-robust` when smaller, `within-noise` otherwise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from archaudit.stats.analyses.fragility import Stratum, fragility_test, high_weights
from archaudit.stats.analyses.stability import (
    MORE_FRAGILE,
    MORE_ROBUST,
    NOT_ESTIMABLE,
    PERMUTATIONS,
    WITHIN_NOISE,
)
from archaudit.stats.inference.corrections import adjust_pvalues, error_rate

LOGIT_MEASURES = ("attn_logit", "log_z")


@dataclass(frozen=True)
class LogitRun:
    arm: str
    lr: float
    seed: int
    stable: bool
    attn_logit: float
    """The largest attention logit logged over the run (NaN: none logged)."""
    log_z: float
    """|log Z| at the last validation with a finite value (NaN: none)."""

    def scores(self) -> tuple[float, float]:
        return (self.attn_logit, self.log_z) if self.stable else (math.inf, math.inf)


@dataclass(frozen=True)
class LogitVerdict:
    arm: str
    baseline: str
    p: float | None
    p_adjusted: float | None
    measure: str
    """The measure with the larger |z| (`LOGIT_MEASURES`); "" when none varies."""
    z: tuple[float, ...]
    verdict: str
    alpha: float
    correction: str
    error_rate: str


def logit_strata(arm: Sequence[LogitRun], base: Sequence[LogitRun]) -> list[Stratum] | None:
    """One stratum per rate, the upper half of the grid high; None unless both arms have the
    same rates (at least two) with two runs or more at each."""
    rates = sorted({r.lr for r in base})
    if len(rates) < 2 or rates != sorted({r.lr for r in arm}):
        return None
    grouped = [([r for r in arm if r.lr == lr], [r for r in base if r.lr == lr]) for lr in rates]
    if any(len(a) < 2 or len(b) < 2 for a, b in grouped):
        return None
    weights = high_weights(rates, statistics.median_low(rates))
    return [
        Stratum(tuple(r.scores() for r in a), tuple(r.scores() for r in b), w)
        for (a, b), w in zip(grouped, weights, strict=True)
    ]


def judge_logits(
    runs: Mapping[str, Sequence[LogitRun]],
    baseline: str,
    *,
    alpha: float = 0.05,
    correction: str = "holm",
    permutations: int = PERMUTATIONS,
) -> list[LogitVerdict]:
    """Every arm but the baseline against it, one logit test each, Holm over the arms."""
    strata = {a: logit_strata(runs[a], runs[baseline]) for a in runs if a != baseline}
    tests = {
        a: fragility_test(s, permutations, measures=LOGIT_MEASURES)
        for a, s in strata.items()
        if s is not None
    }
    pvalues = [t.p for t in tests.values()]
    adjusted = dict(zip(tests, adjust_pvalues(pvalues, correction) if pvalues else [], strict=True))
    out = []
    for arm in strata:
        test = tests.get(arm)
        if test is None:
            verdict = NOT_ESTIMABLE
        elif adjusted[arm] >= alpha or test.direction == 0:
            verdict = WITHIN_NOISE
        else:
            verdict = MORE_FRAGILE if test.direction > 0 else MORE_ROBUST
        out.append(
            LogitVerdict(
                arm,
                baseline,
                None if test is None else test.p,
                None if test is None else float(adjusted[arm]),
                "" if test is None else test.measure,
                () if test is None else test.z,
                verdict,
                alpha,
                correction,
                error_rate(correction),
            )
        )
    return out
