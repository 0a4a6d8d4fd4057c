"""Published directions about stability, checked on a stress result (docs/stability.md).

Each check reads the stress result of an audit that has the arms it needs and says whether the
direction holds at that scale, with its estimate and interval:

- qk-layernorm lowers LR sensitivity (Wortsman et al. 2023, Fig. 1);
- z-loss reduces output-logit divergence (|log Z|) at high rates (Wortsman et al. 2023, §3.2);
- Post-LN is stable over fewer rates than Pre-LN (Xiong et al. 2020);
- warmup widens Post-LN's stable range (Xiong et al. 2020);
- a Post-LN model breaks at a depth at which Pre-LN does not (depth stress).

`holds`: the estimate has the published sign and its interval (or exact test, at α) excludes
no effect; `direction only`: the sign agrees but the interval includes no effect; `does not
hold`: the sign disagrees or there is no difference; `not run`: the arms are missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from archaudit.audit.grid.plan import BASELINE
from archaudit.audit.stability.stress_result import StressResult
from archaudit.stats.analyses.fragility import MEASURES
from archaudit.stats.analyses.stability import ArmStability, unstable_test

HOLDS, DIRECTION_ONLY, DOES_NOT_HOLD, NOT_RUN = (
    "holds",
    "direction only",
    "does not hold",
    "not run",
)
ALPHA = 0.05
HIGH_RATES = 2
"""z-loss check: the top rates of the grid compared."""


@dataclass(frozen=True)
class DirectionCheck:
    claim: str
    source: str
    measure: str
    estimate: float
    interval: tuple[float, float]
    """95% interval of the estimate; for the counts of unstable runs, NaN (an exact p instead)."""
    p: float | None
    status: str


def _status(estimate: float, interval: tuple[float, float], p: float | None, sign: int) -> str:
    if not math.isfinite(estimate) or estimate * sign <= 0:
        return DOES_NOT_HOLD
    lo, hi = interval
    excluded = (lo > 0 or hi < 0) if math.isfinite(lo) and math.isfinite(hi) else False
    return HOLDS if excluded or (p is not None and p < ALPHA) else DIRECTION_ONLY


def qk_norm_sensitivity(result: StressResult) -> DirectionCheck:
    claim = "qk-layernorm lowers LR sensitivity"
    arm, base = result.arm("qk_norm"), result.arm(BASELINE)
    if arm is None or base is None:
        return _not_run(claim, "Wortsman et al. 2023, Fig. 1", "ΔS")
    delta, interval = _sensitivity_delta(arm, base)
    p = next((v.p_sensitivity for v in result.verdicts if v.arm == arm.arm), None)
    return DirectionCheck(
        claim,
        "Wortsman et al. 2023, Fig. 1",
        "ΔS = S(qk_norm) − S(baseline)",
        delta,
        interval,
        p,
        _status(delta, interval, p, -1),
    )


def _sensitivity_delta(arm: ArmStability, base: ArmStability) -> tuple[float, tuple[float, float]]:
    """ΔS with the two arms' 95% half-widths added in quadrature, each side apart: below, the
    arm's lower reach and the baseline's upper one (the S intervals are not symmetric)."""
    delta = arm.sensitivity - base.sensitivity
    (arm_below, arm_above), (base_below, base_above) = _reach(arm), _reach(base)
    return delta, (
        delta - math.hypot(arm_below, base_above),
        delta + math.hypot(arm_above, base_below),
    )


def _reach(arm: ArmStability) -> tuple[float, float]:
    """How far the S interval reaches below and above S."""
    lo, hi = arm.sensitivity_interval
    return arm.sensitivity - lo, hi - arm.sensitivity


def z_loss_log_z(result: StressResult) -> DirectionCheck:
    claim = "z-loss reduces output-logit divergence at high rates"
    source, measure = (
        "Wortsman et al. 2023, §3.2",
        "Δ final abs log Z (z_loss − baseline), top rates",
    )
    base = result.arm(BASELINE)
    if base is None or result.arm("z_loss") is None:
        return _not_run(claim, source, measure)
    high = set(base.lrs[-HIGH_RATES:])
    values = {arm: _final_log_z(result, arm, high) for arm in ("z_loss", BASELINE)}
    delta, interval = _welch(values["z_loss"], values[BASELINE])
    return DirectionCheck(
        claim, source, measure, delta, interval, None, _status(delta, interval, None, -1)
    )


def _final_log_z(result: StressResult, arm: str, rates: set[float]) -> list[float]:
    out = []
    for t in result.traces:
        finite = [v for v in t.signals["log_z_max"] if math.isfinite(v)]
        if t.arm == arm and t.lr in rates and t.layers == _base_layers(result) and finite:
            out.append(finite[-1])
    return out


def _base_layers(result: StressResult) -> int:
    return min((t.layers for t in result.traces), default=0)


def _welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, tuple[float, float]]:
    """Δ = mean(a) − mean(b) and Welch's 95% interval (scipy's `ttest_ind`)."""
    if len(a) < 2 or len(b) < 2:
        return math.nan, (math.nan, math.nan)
    x, y = np.asarray(a), np.asarray(b)
    delta = float(x.mean() - y.mean())
    if x.var(ddof=1) / len(x) + y.var(ddof=1) / len(y) == 0:
        return delta, (delta, delta)
    low, high = sps.ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
    return delta, (float(low), float(high))


def post_ln_range(result: StressResult) -> DirectionCheck:
    claim = "Post-LN is stable over fewer rates than Pre-LN"
    verdict = next((v for v in result.verdicts if v.arm == "post_ln"), None)
    if verdict is None or verdict.p_primary_adjusted is None:  # a result from before issue 43
        return _unstable_check(result, "post_ln", BASELINE, claim)
    return _primary_check(
        claim,
        "Xiong et al. 2020",
        "rates",
        verdict.primary_measure,
        verdict.primary_z,
        verdict.p_primary_adjusted,
    )


def _primary_check(
    claim: str, source: str, over: str, measure: str, z: Sequence[float], p: float
) -> DirectionCheck:
    """A direction judged by the verdict's primary test (post_ln against the baseline): its
    estimate is the z of the measure that decided, its p the Holm-corrected one."""
    estimate = z[MEASURES.index(measure)] if measure else math.nan
    nan = (math.nan, math.nan)
    return DirectionCheck(
        claim,
        source,
        f"primary test over {over} (post_ln vs baseline): z of {measure or '–'}, Holm p",
        estimate,
        nan,
        p,
        _status(estimate, nan, p, 1),
    )


def warmup_widens(result: StressResult) -> DirectionCheck:
    return _unstable_check(
        result,
        "post_ln+no_warmup",
        "post_ln",
        "warmup widens Post-LN's stable range",
    )


def _unstable_check(result: StressResult, worse: str, better: str, claim: str) -> DirectionCheck:
    source, measure = "Xiong et al. 2020", f"Δ unstable runs ({worse} − {better})"
    a, b = result.arm(worse), result.arm(better)
    if a is None or b is None or a.lrs != b.lrs:
        return _not_run(claim, source, measure)
    delta, p = unstable_test(a.unstable, a.runs, b.unstable, b.runs)
    nan = (math.nan, math.nan)
    return DirectionCheck(claim, source, measure, float(delta), nan, p, _status(delta, nan, p, 1))


def post_ln_depth(result: StressResult) -> DirectionCheck:
    """The depth points where Post-LN broke more often than Pre-LN at the same depth and rate;
    the exact test pools them over (depth, rate) strata."""
    claim = "Post-LN breaks at a depth at which Pre-LN does not"
    source, measure = (
        "Xiong et al. 2020 (depth stress)",
        "Δ unstable runs (post_ln − baseline), 2×/4× depth",
    )
    verdict = next((v for v in result.depth_verdicts if v.arm == "post_ln"), None)
    if verdict is not None and verdict.p_adjusted is not None:
        return _primary_check(
            claim, source, "depth", verdict.measure, verdict.z, verdict.p_adjusted
        )
    deep = [d for d in result.depth if d.layers > _base_layers(result)]
    pairs = [
        (p, b)
        for p in deep
        if p.arm == "post_ln"
        for b in deep
        if b.arm == BASELINE and (b.layers, b.lr) == (p.layers, p.lr)
    ]
    if not pairs:
        return _not_run(claim, source, measure)
    k_a, n_a = [p.unstable for p, _ in pairs], [p.runs for p, _ in pairs]
    k_b, n_b = [b.unstable for _, b in pairs], [b.runs for _, b in pairs]
    delta, pv = unstable_test(k_a, n_a, k_b, n_b)
    nan = (math.nan, math.nan)
    return DirectionCheck(claim, source, measure, float(delta), nan, pv, _status(delta, nan, pv, 1))


def _not_run(claim: str, source: str, measure: str) -> DirectionCheck:
    return DirectionCheck(claim, source, measure, math.nan, (math.nan, math.nan), None, NOT_RUN)


CHECKS: tuple[Callable[[StressResult], DirectionCheck], ...] = (
    qk_norm_sensitivity,
    z_loss_log_z,
    post_ln_range,
    warmup_widens,
    post_ln_depth,
)


def check_directions(result: StressResult) -> list[DirectionCheck]:
    return [check(result) for check in CHECKS]


def directions_table(checks: Sequence[DirectionCheck]) -> str:
    """The Markdown table docs/stability.md reproduces from the stored result."""
    lines = [
        "| published direction | source | measure | estimate | 95% interval | p | at this scale |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        lo, hi = c.interval
        interval = f"[{lo:.3g}, {hi:.3g}]" if math.isfinite(lo) else "–"
        p = "–" if c.p is None else f"{c.p:.3g}"
        estimate = f"{c.estimate:+.3g}" if math.isfinite(c.estimate) else "–"
        lines.append(
            f"| {c.claim} | {c.source} | {c.measure} | {estimate} | {interval} | {p} | {c.status} |"
        )
    return "\n".join(lines) + "\n"
