"""A claim judged from its run folders: `judge_claim(claim, spec) -> Replication`.

The verdict that decides is the tool's own, read from the stores `run` and `stress` leave:

- `verdict`: the arm's `ArmVerdict` in `findings` (calibrated level, α split over the audit's
  primary metrics); `interaction`: the combination's factorial contrast (Holm over the
  combinations); `stress-rate` / `stress-depth`: the arm's verdict in the stored stress test;
  `stress-depth-loss`: its depth-sensitivity verdict there (ΔD, Holm over the depth arms);
  `stress-logit`: its logit verdict there (attention logit or final |log Z|, Holm over the arms).
- reproduced: a declared verdict in the published direction; contradicted: a declared verdict
  against it; not established: no declared verdict, with the power the design had and what
  would reach 0.8 (`stats.simulation.power` for a verdict; for a stress claim the stress power
  model fitted to the confirming run's stored runs, `stress_claim_power`, beside the stress
  test's exact floor); not run: no results yet; needs: the tool lacks a part (the
  claim's `status`), never run.
- the CPU cost: each finished run's process CPU seconds (user + system of the attempt that
  finished it, training and evaluation: `process_cpu_s` in DONE, recorded since issue 54's
  second wave), plus a level claim's measuring; a run finished before that has no CPU clock
  in its folder and counts its training thread-seconds instead (tokens / tokens per second ×
  torch threads: the CPU time on an idle machine, more than it under load). `cpu_measured`
  says how many runs were measured.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from archaudit.audit.replicating.replicate import Claim, ClaimTest, Direction
from archaudit.audit.setup.spec import AuditSpec
from archaudit.errors import ArchauditError
from archaudit.rundir import DONE, ENV


class Outcome(StrEnum):
    REPRODUCED = "reproduced"
    CONTRADICTED = "contradicted"
    NOT_ESTABLISHED = "not established"
    NOT_RUN = "not run"
    NEEDS = "needs"


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What the tool's verdict says about a claim's arm, before it is compared with the claim."""

    verdict: str
    """The tool's own verdict, as it prints it."""
    sign: int
    """+1: declared better than the baseline, −1: declared worse, 0: nothing declared."""
    measure: str
    estimate: float
    interval: tuple[float, float] = (math.nan, math.nan)
    p: float | None = None
    """The p its verdict compares with `alpha` (corrected over its family)."""
    alpha: float = math.nan
    power: float | None = None
    """The power the design had for `power_for` (None: not modelled for this test)."""
    power_for: str = ""
    to_reach: str = ""
    """What would give power 0.8 (seeds or scale), in words."""
    design: str = ""
    """Seeds × scale, in words."""


@dataclass(frozen=True, kw_only=True)
class Replication:
    """One claim's result: the classification with the numbers behind it."""

    claim: str
    title: str
    source: str
    published: str
    """The published direction (and size, when the paper gives one), in words."""
    outcome: Outcome
    evidence: Evidence | None
    """None when nothing was judged (not run, needs)."""
    runs: int
    """Finished runs in the claim's audit folder (its stress test included)."""
    cpu_s: float
    """Their CPU seconds: measured (`process_cpu_s`) where the run recorded it, else its
    training thread-seconds (module doc); a level claim's measuring added."""
    cpu_measured: int = 0
    """How many of `runs` recorded their process CPU time (the rest are thread-seconds)."""
    why: str = ""
    """Why it is not established, not run, or what it needs."""

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    def cpu_cell(self) -> str:
        """Measured process CPU-minutes, or the training thread-minutes of runs that kept no
        CPU clock, said so (they exceed the CPU time under load): the table's and the
        console's CPU column."""
        if not self.runs and not self.cpu_s:
            return "—"
        minutes = f"{self.cpu_s / 60:.1f}"
        if self.cpu_measured == self.runs:
            return f"{minutes} ({self.runs} runs)" if self.runs else f"{minutes} (measuring)"
        if self.cpu_measured == 0:
            return f"{minutes} thread-min ({self.runs} runs, no CPU clock in their folders)"
        return f"{minutes} ({self.runs} runs, {self.runs - self.cpu_measured} as thread-min)"


def published(claim: Claim) -> str:
    """The published direction and size, in words."""
    size = claim.published_size
    if claim.is_level:
        band = f"mean {claim.measure} in {_band(claim.band)}"
        return band + (f"; {size}" if size else "")
    if not claim.direction:
        return size or claim.title
    return f"{claim.arm} {claim.direction} than the baseline" + (f"; {size}" if size else "")


def classify(direction: Direction, sign: int) -> Outcome:
    """Reproduced in the published direction, contradicted against it, else not established."""
    if sign == 0:
        return Outcome.NOT_ESTABLISHED
    return Outcome.REPRODUCED if sign == direction.sign else Outcome.CONTRADICTED


Judge = Callable[[Claim, AuditSpec], Evidence | None]


def judge_claim(claim: Claim, spec: AuditSpec) -> Replication:
    """Judge `claim` from `spec`'s run folders (nothing trains): None from a judge = no results."""
    cost = training_cost(spec.audit_dir)
    empty = Replication(
        claim=claim.name, title=claim.title, source=claim.source, published=published(claim),
        outcome=Outcome.NEEDS, evidence=None, runs=cost.runs,
        cpu_s=cost.cpu_s + _measuring_cpu_s(claim, spec), cpu_measured=cost.measured,
        why=claim.status,
    )  # fmt: skip
    if not claim.runnable:
        return empty
    evidence = JUDGES[ClaimTest(claim.test)](claim, spec)
    if evidence is None:
        why = f"no results of audit {spec.name!r} in the runs folder"
        return dataclasses.replace(empty, outcome=Outcome.NOT_RUN, why=why)
    # a level claim's sign is already +1 inside its band (its published direction)
    published_as = Direction.BETTER if claim.is_level else Direction(claim.direction)
    outcome = classify(published_as, evidence.sign)
    why = _why(evidence) if outcome is Outcome.NOT_ESTABLISHED else ""
    return dataclasses.replace(empty, outcome=outcome, evidence=evidence, why=why)


def _why(evidence: Evidence) -> str:
    power = (
        f"power {evidence.power:.2f} for {evidence.power_for}"
        if evidence.power is not None
        else evidence.power_for
    )
    return f"{evidence.verdict}: {power}; {evidence.to_reach}".rstrip("; ")


@dataclass(frozen=True)
class TrainingCost:
    runs: int
    """Finished runs."""
    cpu_s: float
    measured: int
    """Runs whose DONE holds their process CPU seconds; the rest count thread-seconds."""


def training_cost(audit_dir: Path) -> TrainingCost:
    """Finished runs under `audit_dir` (its stress test included) and their CPU seconds: the
    process CPU time DONE records (`process_cpu_s`), else tokens / tokens per second × the
    run's torch threads (1 when not recorded)."""
    from archaudit.audit.execute.runner import PROCESS_CPU

    runs, measured, seconds = 0, 0, 0.0
    for done in sorted(audit_dir.rglob(DONE)) if audit_dir.is_dir() else ():
        train = _json(done).get("train", {})
        tokens, speed = train.get("tokens"), train.get("tokens_per_s")
        cpu = train.get(PROCESS_CPU)
        runs += 1
        if isinstance(cpu, int | float) and not isinstance(cpu, bool):
            measured += 1
            seconds += cpu
        elif isinstance(tokens, int | float) and isinstance(speed, int | float) and speed > 0:
            threads = _json(done.parent / ENV).get("torch_threads")
            seconds += tokens / speed * max(int(threads or 1), 1)
    return TrainingCost(runs, seconds, measured)


def _measuring_cpu_s(claim: Claim, spec: AuditSpec) -> float:
    """A level claim's measuring (its stored sample's process CPU seconds); 0 otherwise."""
    if not claim.is_level:
        return 0.0
    from archaudit.audit.replicating.replicate_levels import stored_sample

    sample = stored_sample(claim, spec.audit_dir)
    return sample.cpu_s if sample is not None else 0.0


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# --- the judges, one per ClaimTest --------------------------------------------------------


def _judge_verdict(claim: Claim, spec: AuditSpec) -> Evidence | None:
    from archaudit.audit.results.findings import VERDICTS_ONLY, findings
    from archaudit.stats.records.verdicts import IMPROVER, REGRESSOR

    if training_cost(spec.audit_dir).runs == 0:
        return None
    metric = claim.metric or spec.primary_metrics[0]
    scale = claim.scale or spec.scales[-1].name
    record = findings(spec.audit_dir, (metric,), asked=VERDICTS_ONLY)
    judgement = next(
        (j for j in record.judgements if j.metric == metric and j.scale == scale), None
    )
    if judgement is None or claim.arm not in {a.arm for a in judgement.arms}:
        return None
    arm = judgement.arm(claim.arm)
    sign = {IMPROVER: 1, REGRESSOR: -1}.get(arm.verdict, 0)
    effect, label = _effect(claim, abs(arm.delta) / judgement.sigma if judgement.sigma else 0.0)
    power, to_reach = _verdict_power(effect, arm.n_seeds, judgement)
    return Evidence(
        verdict=str(arm.verdict),
        sign=sign,
        measure=f"Δ {metric} (positive = better) at {scale}",
        estimate=arm.delta,
        interval=arm.interval,
        p=arm.p_adj,
        alpha=arm.threshold if math.isfinite(arm.threshold) else judgement.alpha,
        power=power,
        power_for=label,
        to_reach=to_reach,
        design=f"{arm.n_seeds} seeds (baseline {judgement.baseline_n}) × {scale}",
    )


def _effect(claim: Claim, observed: float) -> tuple[float, str]:
    if claim.effect_sigmas:
        return claim.effect_sigmas, f"the planned effect {claim.effect_sigmas:g} σ"
    return observed, f"the measured effect {observed:.2f} σ (no published size in σ)"


def _verdict_power(effect: float, seeds: int, judgement) -> tuple[float | None, str]:
    from archaudit.stats.simulation.power import Design, power, seeds_needed

    m = max(judgement.m, 1)
    try:
        design = Design(
            arm_seeds=max(seeds, 1),
            baseline_seeds=max(judgement.baseline_n, 2),
            n_arms=m,
            alpha=judgement.alpha,
            correction=judgement.correction,
            reference=judgement.reference,
        )
        have = power(effect, design)
        need = seeds_needed(effect, judgement.options, n_arms=m)
    except ArchauditError as err:  # a design the power model does not cover
        return None, f"power not computable here ({err})"
    reach = (
        f"{need} seeds per arm (and baseline) give 0.8"
        if need is not None
        else "no seed count up to 1000 gives 0.8 at this scale (effects under 2 σ are within "
        "noise by rule): a larger scale or longer training"
    )
    return have, reach


def _judge_stress(claim: Claim, spec: AuditSpec, depth: bool) -> Evidence | None:
    from archaudit.audit.stability.stress import STRESS_DIR
    from archaudit.audit.stability.stress_result import RESULT_FILE, read_result
    from archaudit.stats.analyses.fragility import high_weights

    path = spec.audit_dir / STRESS_DIR / RESULT_FILE
    if not path.is_file():
        return None
    result = read_result(path)
    settings = spec.stress
    if depth:
        deep = next((v for v in result.depth_verdicts if v.arm == claim.arm), None)
        if deep is None:
            return None
        verdict, p, estimate = deep.verdict, deep.p_adjusted, float(deep.unstable_delta)
        alpha, family = deep.alpha, len(result.depth_verdicts)
        high = len(settings.depths) * len(settings.depth_lr_factors)
        measure = "Δ unstable runs in the deeper models (arm − baseline)"
        layers = "/".join(f"{d}×" for d in settings.depths)
        design = f"{settings.seeds} seeds per depth × {result.scale} at {layers} the layers"
    else:
        rate = next((v for v in result.verdicts if v.arm == claim.arm), None)
        if rate is None:
            return None
        verdict, p, estimate = rate.verdict, rate.p_primary_adjusted, rate.sensitivity_delta
        alpha, family = rate.alpha, len(result.verdicts)
        rates = settings.lr_factors
        high = sum(w > 0 for w in high_weights(rates, statistics.median_low(rates)))
        measure = "ΔS = LR sensitivity (arm − baseline); positive = more sensitive"
        design = f"{settings.seeds} seeds per rate × {len(rates)} rates × {result.scale}"
    sign = verdict.sign
    power, power_for = _stress_power(claim, spec, result)
    return Evidence(
        verdict=verdict,
        sign=sign,
        measure=measure,
        estimate=estimate,
        p=p,
        alpha=alpha,
        power=power,
        power_for=power_for,
        to_reach=_stress_floor(settings.seeds, high, family, alpha),
        design=design,
    )


NO_STRESS_RUNS = (
    "power not modelled: the stored stress result keeps no runs to fit (written before the "
    "power model, or trimmed); `archaudit stress` on its folder stores them"
)


def _stress_power(claim: Claim, spec: AuditSpec, result) -> tuple[float | None, str]:
    """The stress claim's power in its published direction at the design's seeds, fitted to
    the confirming run's stored runs (`stress_claim_power`), with the seeds for 0.8."""
    from archaudit.audit.replicating.stress_claim_power import stress_claim_power

    settings = spec.stress
    found = stress_claim_power(
        result,
        claim.test,
        claim.arm,
        -Direction(claim.direction).sign,  # better = more robust in the stress test's terms
        settings.seeds,
        alpha=settings.alpha,
        correction=settings.correction,
    )
    return (None, NO_STRESS_RUNS) if found is None else (found.power, found.power_for())


def _judge_stress_logit(claim: Claim, spec: AuditSpec) -> Evidence | None:
    """The arm's logit verdict in the stored sweep: its deciding measure's z as the estimate."""
    from archaudit.audit.stability.stress import STRESS_DIR
    from archaudit.audit.stability.stress_result import RESULT_FILE, read_result
    from archaudit.stats.analyses.fragility import high_weights
    from archaudit.stats.analyses.logits import LOGIT_MEASURES
    from archaudit.stats.analyses.stability import StabilityOutcome

    path = spec.audit_dir / STRESS_DIR / RESULT_FILE
    if not path.is_file():
        return None
    result = read_result(path)
    found = next((v for v in result.logit_verdicts if v.arm == claim.arm), None)
    if found is None:
        return None
    verdict = StabilityOutcome(found.verdict)
    deciding = LOGIT_MEASURES.index(found.measure) if found.measure in LOGIT_MEASURES else None
    estimate = found.z[deciding] if deciding is not None and found.z else math.nan
    settings = spec.stress
    rates = settings.lr_factors
    high = sum(w > 0 for w in high_weights(rates, statistics.median_low(rates)))
    measure = found.measure or "no logit measure varies"
    power, power_for = _stress_power(claim, spec, result)
    return Evidence(
        verdict=verdict,
        sign=verdict.sign,
        measure=f"z of {measure} at the upper rates (arm − baseline); positive = larger",
        estimate=estimate,
        p=found.p_adjusted,
        alpha=found.alpha,
        power=power,
        power_for=power_for,
        to_reach=_stress_floor(settings.seeds, high, len(result.logit_verdicts), found.alpha),
        design=f"{settings.seeds} seeds per rate × {len(rates)} rates × {result.scale}",
    )


def _judge_stress_depth_loss(claim: Claim, spec: AuditSpec) -> Evidence | None:
    """The arm's depth-sensitivity verdict in the stored stress test: ΔD (nats) the estimate."""
    from archaudit.audit.stability.stress import STRESS_DIR
    from archaudit.audit.stability.stress_result import RESULT_FILE, read_result

    path = spec.audit_dir / STRESS_DIR / RESULT_FILE
    if not path.is_file():
        return None
    result = read_result(path)
    found = next((v for v in result.depth_sensitivity if v.arm == claim.arm), None)
    if found is None:
        return None
    settings = spec.stress
    layers = "/".join(f"{d}×" for d in settings.depths)
    power, power_for = _stress_power(claim, spec, result)
    return Evidence(
        verdict=found.verdict,
        sign=found.verdict.sign,
        measure=(
            "ΔD = the rise of the final loss from the sweep's depth to the deeper models "
            f"(arm − baseline; nats; arm {found.degradation:+.3g}, baseline "
            f"{found.baseline_degradation:+.3g}); positive = more fragile"
        ),
        estimate=found.delta,
        p=found.p_adjusted,
        alpha=found.alpha,
        power=power,
        power_for=power_for,
        to_reach=_stress_floor(
            settings.seeds,
            (len(settings.depths) + 1) * len(settings.depth_lr_factors),
            len(result.depth_sensitivity),
            found.alpha,
        ),
        design=f"{settings.seeds} seeds per depth × {result.scale} at 1×/{layers} the layers",
    )


def _stress_floor(seeds: int, high: int, arms: int, alpha: float) -> str:
    """The stress test's exact floor: whether its smallest p can reach Holm's first threshold,
    and the seeds at which it can (necessary for a declaration, not sufficient)."""
    from archaudit.stats.analyses.fragility import smallest_p

    threshold = alpha / max(arms, 1)
    floor = smallest_p([(seeds, seeds)] * high)
    if floor <= threshold:
        return f"its smallest p ({floor:.2g}) can reach α/m = {threshold:.2g}"
    need = seeds
    while smallest_p([(need, need)] * high) > threshold:
        need += 1
    return (
        f"its smallest p ({floor:.2g}) cannot reach α/m = {threshold:.2g}: {need} seeds per "
        "stratum at least"
    )


def _judge_interaction(claim: Claim, spec: AuditSpec) -> Evidence | None:
    from scipy import stats as sps

    from archaudit.audit.results.findings import findings
    from archaudit.audit.results.findings_record import Analysis, Asked

    if training_cost(spec.audit_dir).runs == 0:
        return None
    metric = claim.metric or spec.primary_metrics[0]
    scale = claim.scale or spec.scales[-1].name
    asked = Asked(frozenset({Analysis.VERDICTS, Analysis.INTERACTIONS}), each_scale=True)
    record = findings(spec.audit_dir, (metric,), asked=asked)
    fits = [i for i in record.interactions if i.metric == metric and i.scale == scale]
    combos = [c for fit in fits for c in fit.combinations if c.arm == claim.arm]
    if not combos or not math.isfinite(combos[0].interaction):
        return None
    combo, alpha = combos[0], 0.05
    declared = math.isfinite(combo.p_adj) and combo.p_adj < alpha
    sign = (1 if combo.interaction > 0 else -1) if declared else 0
    half = sps.t.isf(alpha / 2, combo.df) * combo.se if combo.df > 0 else math.nan
    return Evidence(
        verdict=("interaction " + ("better" if sign > 0 else "worse"))
        if sign
        else "no interaction",
        sign=sign,
        measure=f"interaction contrast on {metric} (positive = better) at {scale}",
        estimate=combo.interaction,
        interval=(combo.interaction - half, combo.interaction + half),
        p=combo.p_adj,
        alpha=alpha,
        power=contrast_power(combo.interaction, combo.se, combo.df, alpha),
        power_for=f"the measured contrast {combo.interaction:.3g} (SE {combo.se:.3g} = "
        f"{combo.se / fits[0].sigma:.2f} σ; t test on its df, α {alpha:g}, no published size)",
        to_reach=_contrast_seeds(combo.interaction, combo.se, combo.df, combo.n_seeds, alpha),
        design=f"{combo.n_seeds} seeds per cell × {scale}",
    )


def contrast_power(effect: float, se: float, df: float, alpha: float) -> float | None:
    """Two-sided power of the contrast's t test at `df` for a true contrast `effect` (the
    noncentral t); None when the contrast has no spread."""
    from scipy import stats as sps

    if not (se > 0 and df > 0 and math.isfinite(effect)):
        return None
    critical = float(sps.t.isf(alpha / 2, df))
    ncp = abs(effect) / se
    return float(sps.nct.sf(critical, df, ncp) + sps.nct.cdf(-critical, df, ncp))


def _contrast_seeds(effect: float, se: float, df: float, seeds: int, alpha: float) -> str:
    """The seeds per cell whose contrast (SE ∝ 1/√seeds, df ∝ seeds − 1) detects `effect`
    with power 0.8, up to 1000."""
    if seeds < 2 or not (se > 0 and df > 0) or effect == 0:
        return "no seed count: the measured contrast is 0 or has no spread"
    per_seed = df / (seeds - 1)
    for n in range(2, 1001):
        power = contrast_power(effect, se * math.sqrt(seeds / n), per_seed * (n - 1), alpha)
        if power is not None and power >= 0.8:
            return f"{n} seeds per cell give 0.8 for the measured contrast"
    return "no seed count up to 1000 gives 0.8 for the measured contrast"


def _judge_level(claim: Claim, spec: AuditSpec) -> Evidence | None:
    from archaudit.audit.replicating.replicate_levels import level_test, stored_sample

    sample = stored_sample(claim, spec.audit_dir)
    if sample is None:
        return None
    test = level_test(sample.values, claim.band, claim.alpha)
    verdict = {1: "inside the band", -1: "outside the band"}.get(test.sign, "undecided")
    reach = (
        f"{test.units_needed} {sample.unit}s give 0.8"
        if test.units_needed is not None
        else f"no number of {sample.unit}s up to 1000 gives 0.8 at the distance measured"
    )
    reference = (
        f"; {sample.reference_name}: {sample.reference:.4g}" if sample.reference_name else ""
    )
    return Evidence(
        verdict=f"{verdict} {_band(claim.band)}",
        sign=test.sign,
        measure=f"mean {sample.measure} over {test.n} {sample.unit}s{reference}",
        estimate=test.mean,
        interval=test.interval,
        p=test.p,
        alpha=claim.alpha,
        power=test.power,
        power_for=f"the measured distance to the band, {test.distance_sd:.2f} sd of the "
        f"{sample.unit}s (no published size in these units)",
        to_reach=reach,
        design=f"{test.n} {sample.unit}s; {sample.source}",
    )


def _band(band: tuple[float, float]) -> str:
    low, high = band
    if not math.isfinite(high):
        return f"(> {low:g})"
    if not math.isfinite(low):
        return f"(< {high:g})"
    return f"[{low:g}, {high:g}]"


JUDGES: Mapping[ClaimTest, Judge] = {
    ClaimTest.LEVEL: _judge_level,
    ClaimTest.VERDICT: _judge_verdict,
    ClaimTest.INTERACTION: _judge_interaction,
    ClaimTest.STRESS_RATE: lambda claim, spec: _judge_stress(claim, spec, depth=False),
    ClaimTest.STRESS_DEPTH: lambda claim, spec: _judge_stress(claim, spec, depth=True),
    ClaimTest.STRESS_DEPTH_LOSS: _judge_stress_depth_loss,
    ClaimTest.STRESS_LOGIT: _judge_stress_logit,
}
"""How each kind of claim is read from the folders."""
