"""The report's sections, in reading order: one function each, returning its content or, when
the results hold nothing for it, the reason it is absent. Formatting only: every number comes
from `ReportData`."""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from archaudit.audit.results.findings import Analysis
from archaudit.audit.results.power_cases import PowerCase
from archaudit.formatting import (
    BETTER_DOWN,
    BETTER_UP,
    DIGITS,
    MISSING,
    VALUE_DIGITS,
    num,
    pvalue,
    signed,
)
from archaudit.metrics import metric_info
from archaudit.names import BASELINE
from archaudit.report import figures, target_figures
from archaudit.report.blocks import Block, Bullets, Grid, Notice, Paragraph, Row, Section
from archaudit.report.data import ReportData, bands
from archaudit.report.figures import Figure
from archaudit.report.stability import stability
from archaudit.stats.analyses.aggregate import TASK_SUFFIX
from archaudit.stats.analyses.decoupling import FLAT_SHARE, Decoupling
from archaudit.stats.inference.corrections import error_rate
from archaudit.stats.judging.grading import CAVEAT_SEPARATOR
from archaudit.stats.judging.judgement import ArmVerdict, Judgement
from archaudit.stats.judging.judgement_text import interval_kind
from archaudit.stats.predictions.predict import Prediction
from archaudit.stats.records.target import TargetPrediction
from archaudit.stats.records.verdicts import (
    CANDIDATE_IMPROVER,
    CANDIDATE_REGRESSOR,
    DIVERGED,
    IMPROVER,
    INCOMPLETE,
    NOMINAL_IMPROVER,
    NOMINAL_REGRESSOR,
    REGRESSOR,
    VERDICTS,
    WITHIN_NOISE,
)

NOT_COMPUTED = "not computed"


def _absent(key: str, title: str, intro: str, reason: str) -> Section:
    return Section(key, title, intro, absent=reason)


def slug(text: str) -> str:
    """A file- and id-safe name, one per text: a name that had to change keeps a short hash of
    the original, so `x.1` and `x_1` (or `a/b` and `a_b`) never share a figure file."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "x"
    if safe == text:
        return safe
    return f"{safe}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def _key(kind: str, metric: str, baseline: str) -> str:
    """A figure's name: one per metric, and per baseline when an audit has several."""
    return f"{kind}-{slug(metric)}" + ("" if baseline == BASELINE else f"-{slug(baseline)}")


def _why(data: ReportData, *analyses: Analysis) -> str:
    """The recorded reason for the first of `analyses` that could not be made."""
    why = data.findings.why(*analyses)
    return why or "the results hold no finished runs to judge yet"


def _where(scales: Sequence[str], all_scales: Sequence[str]) -> str:
    if len(scales) == len(all_scales) == 2:
        return "at both scales"
    if len(scales) == len(all_scales) > 2:
        return f"at all {len(scales)} scales"
    return "at " + ", ".join(scales)


def _design_fwer(v: Judgement) -> str:
    """The design's measured rate, named for what the correction controls (BH: the FDR)."""
    if not math.isfinite(v.design_fwer):
        return NOT_COMPUTED
    return f"{num(v.design_fwer)} ({error_rate(v.correction)})"


def _panel_worst(v: Judgement) -> str:
    """The noise panel's worst measured rate (stats/records/noise_panel.py)."""
    return num(v.design_panel_worst) if math.isfinite(v.design_panel_worst) else NOT_COMPUTED


def _design_mde(v: Judgement) -> str:
    return mde_text(v.metric, v.mde) if math.isfinite(v.mde) else NOT_COMPUTED


UNDETECTABLE = "cannot be detected at this design"


def mde_text(metric: str, mde: float | None, digits: int = DIGITS) -> str:
    """An MDE in the metric's units, flagged when it is wider than the metric's whole range
    (the registry's): then no true effect, however large, would be detected."""
    return num(mde, digits) + _beyond(metric, mde)


def _beyond(metric: str, mde: float | None) -> str:
    if mde is not None and metric_info(metric).beyond_range(mde):
        return f": beyond the metric's range, {UNDETECTABLE}"
    return ""


def _reference(v: Judgement) -> str:
    if v.calibrated is False:
        return f"{v.reference or 'paper mode'} (uncalibrated)"
    return v.reference or "default"


# ---------------------------------------------------------------------------------------------
# 1. the answer


def arm_lines(verdicts: Sequence[Judgement]) -> list[str]:
    """One line per arm across metrics and scales, e.g. "post_ln: regressor on val_loss at both
    scales; no downstream_avg effect detected (MDE 0.02 at d48)".

    A run's state (diverged, incomplete) is said once per arm, not once per metric. Arms with
    verdicts come first, then those with nominal results, then the rest by their largest |Δ|
    in σ."""
    scales = list(dict.fromkeys(v.scale for v in verdicts))
    by_arm: dict[str, dict[str, list[tuple[str, ArmVerdict]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for v in verdicts:
        for row in v.arms:
            by_arm[row.arm][v.metric].append((v.scale, row))
    lines = []
    for arm, metrics in sorted(by_arm.items(), key=lambda item: _importance(item[1], verdicts)):
        states: dict[str, dict[str, ArmVerdict]] = defaultdict(dict)
        parts = []
        for metric, rows in metrics.items():
            parts += _metric_parts(metric, rows, scales, states)
        for state, at in states.items():
            steps = sorted({row.diverged_step for row in at.values() if row.diverged_step})
            step = f" (step {', '.join(map(str, steps))})" if steps else ""
            parts.insert(0, f"{state} {_where(list(at), scales)}{step}")
        lines.append(f"{arm}: " + "; ".join(parts) + _limits(metrics))
    return lines


def _limits(metrics: dict[str, list[tuple[str, ArmVerdict]]]) -> str:
    """What limits an arm's line: each caveat of its verdicts once (`ArmVerdict.caveats`, the
    words of the detail table, the console and the JSON), with the scales it holds at when
    that is not every scale of the line."""
    at: dict[str, list[str]] = defaultdict(list)
    for scale, row in (item for rows in metrics.values() for item in rows):
        for text in row.caveats:
            at[text] += [scale] * (scale not in at[text])
    scales = {scale for rows in metrics.values() for scale, _ in rows}
    said = [text + ("" if set(s) == scales else f" at {', '.join(s)}") for text, s in at.items()]
    return f" — limits: {CAVEAT_SEPARATOR.join(said)}" if said else ""


def _metric_parts(
    metric: str,
    rows: Sequence[tuple[str, ArmVerdict]],
    scales: Sequence[str],
    states: dict[str, dict[str, ArmVerdict]],
) -> list[str]:
    """What one arm's line says about one metric: verdicts, nominal results (as nominal), then
    where no effect was detected with the MDE of each scale; run states go to `states`."""
    groups: dict[str, list[str]] = defaultdict(list)
    nominal = []
    for scale, row in rows:
        if row.verdict in _STATES:
            states[row.verdict].setdefault(scale, row)
        elif row.verdict in _NOMINAL:
            nominal.append(
                f"{row.verdict} on {metric} at {scale} (Δ {signed(row.delta)}, p "
                f"{pvalue(row.p)}: significant before the correction only)"
            )
        elif row.verdict != WITHIN_NOISE:
            groups[row.verdict].append(scale)
    parts = [f"{verdict} on {metric} {_where(s, scales)}" for verdict, s in groups.items()]
    parts += nominal
    quiet = [(scale, row) for scale, row in rows if row.verdict == WITHIN_NOISE]
    if quiet:
        mdes = ", ".join(
            f"{num(row.mde, 2)} at {scale}{_beyond(metric, row.mde)}" for scale, row in quiet
        )
        where = "" if len(quiet) == len(scales) else " " + _where([s for s, _ in quiet], scales)
        parts.append(f"no {metric} effect detected{where} (MDE {mdes})")
    return parts


_STATES = (DIVERGED, INCOMPLETE)
_NOT_SURVIVING = (NOMINAL_IMPROVER, NOMINAL_REGRESSOR, CANDIDATE_IMPROVER, CANDIDATE_REGRESSOR)
"""The funnel's "nominal" column: beyond 2σ, significant before the correction or the single
seed's 6σ bound only."""
_NOMINAL = (NOMINAL_IMPROVER, NOMINAL_REGRESSOR)


def _importance(
    metrics: dict[str, list[tuple[str, ArmVerdict]]], verdicts: Sequence[Judgement]
) -> tuple[int, float]:
    """Sort key of an arm's line: verdicts first, then nominal results, then the largest |Δ|
    in σ of its family."""
    sigma = {(v.metric, v.scale): v.sigma for v in verdicts}
    rows = [(metric, scale, row) for metric, items in metrics.items() for scale, row in items]
    said = {row.verdict for _, _, row in rows}
    rank = 0 if said & {IMPROVER, REGRESSOR} else 1 if said & set(_NOMINAL) else 2
    sizes = [
        abs(row.delta) / sigma[(metric, scale)]
        for metric, scale, row in rows
        if math.isfinite(row.delta) and sigma[(metric, scale)] > 0
    ]
    return rank, -max(sizes, default=0.0)


def answer(data: ReportData) -> Section:
    title, intro = (
        "The answer",
        "One line per modification (arm): what the audit can claim about it, on each metric and "
        "scale, after the multiple-testing correction, and what limits it (the same words as the "
        "detail table's limits). Δ > 0 always means better than the baseline. 'No effect "
        "detected' is not 'no effect': the MDE is the smallest true effect "
        "this design would have caught with the stated power.",
    )
    if not data.verdicts:
        return _absent("answer", title, intro, _why(data, Analysis.VERDICTS))
    blocks: list[Block] = []
    if data.progress is not None and data.progress.finished < data.progress.total:
        blocks.append(
            Paragraph(
                f"Partial report: {data.progress.finished} of {data.progress.total} runs "
                "finished; verdicts may change as the rest finish."
            )
        )
    blocks.append(Bullets(tuple(arm_lines(data.verdicts))))
    blocks.append(funnel(data.verdicts))
    blocks.append(colour_key(data))
    return Section("answer", title, intro, tuple(blocks))


def funnel(verdicts: Sequence[Judgement]) -> Grid:
    """How many arms of each family ended where: within noise, nominal, surviving, diverged."""
    return Grid(
        "The funnel: arms → within noise / nominal (significant before the correction only) "
        "/ surviving the correction / diverged, with the design's measured family-wise "
        "error rate (FWER; the false discovery rate, FDR, under BH: normal seed noise, and the "
        "worst over the noise panel of heavy tails, skew and unequal arm variances and beyond it: "
        "one arm 10–50× or the baseline alone 3–10× as wide; the loop's over the panel) and "
        "minimum detectable effect (MDE).",
        (
            "metric",
            "scale",
            "arms",
            "within noise",
            "nominal",
            "surviving",
            "diverged",
            "incomplete",
            "design error rate",
            "worst, panel and beyond",
            "design MDE",
            "FWER if uncorrected",
            "test",
        ),
        tuple(_funnel_row(v) for v in verdicts),
    )


def _funnel_row(v: Judgement) -> tuple[str, ...]:
    count = {name: sum(a.verdict == name for a in v.arms) for name in VERDICTS}
    return (
        v.metric,
        v.scale,
        str(len(v.arms)),
        str(count[WITHIN_NOISE]),
        str(sum(count[name] for name in _NOT_SURVIVING)),
        str(count[IMPROVER] + count[REGRESSOR]),
        str(count[DIVERGED]),
        str(count[INCOMPLETE]),
        _design_fwer(v),
        _panel_worst(v),
        _design_mde(v),
        f"{v.fwer_uncorrected:.0%}",
        _reference(v),
    )


def colour_key(data: ReportData) -> Paragraph:
    """The arms' colours in words: the same in every figure of the page and of its twin."""
    named = ", ".join(f"{arm} {colour.name}" for arm, colour in data.colours.items())
    return Paragraph(f"Colours, the same in every figure: {named}.")


# ---------------------------------------------------------------------------------------------
# 2. the noise floor (forest plot)


def noise_floor(data: ReportData) -> Section:
    title, intro = (
        "Effects against the noise floor",
        "Each large dot is an arm's difference from the baseline (Δ, positive = better), each "
        "small dot one of its seeds, and the line its (1 − α) interval, simultaneous over the "
        "family: an interval clear of 0 is significant even under Bonferroni, and Holm finds at "
        "least as much. The grey band is ±2σ, where σ is the seed-to-seed noise of the "
        "baseline: an effect inside it is within noise by rule.",
    )
    if not data.verdicts:
        return _absent("forest", title, intro, _why(data, Analysis.VERDICTS))
    blocks: list[Block] = [
        Row(
            tuple(
                figures.forest(f"forest-{slug(v.metric)}-{slug(v.scale)}", v, data.colours)
                for v in data.verdicts
                if v.metric == metric and v.arms
            )
        )
        for metric in data.metrics
    ]
    kinds = dict.fromkeys(interval_kind(v) for v in data.verdicts)
    blocks.append(Paragraph("Intervals: " + "; ".join(kinds) + "."))
    untested = sorted({a.arm for v in data.verdicts for a in v.arms if not _has_interval(a)})
    if untested:
        blocks.append(Paragraph("No interval (not tested): " + ", ".join(untested) + "."))
    left_out = sorted(
        {f"{a.arm} ({a.verdict})" for v in data.verdicts for a in v.arms if math.isnan(a.delta)}
    )
    if left_out:
        blocks.append(Paragraph("Not shown (no Δ): " + ", ".join(left_out) + "."))
    return Section("forest", title, intro, tuple(blocks))


# ---------------------------------------------------------------------------------------------
# 3. decoupling


def decoupling(data: ReportData) -> Section:
    title, intro = (
        "Loss against downstream",
        "Does a better loss mean better downstream results? Each point is an arm: across, its "
        "relative loss change (left = lower loss); up, its downstream Δ. Diamonds are "
        "decoupled arms: their downstream result is significant while the loss was shown flat, "
        "or the reverse, or both moved in opposite directions. The verdicts are those of the "
        "answer above. 'Flat' means shown equivalent to the baseline (its interval inside its "
        f"MDE) with an MDE of at most {FLAT_SHARE:.0%} of the baseline's value; a wider MDE makes "
        "flat not testable. Not significant alone is not flat.",
    )
    shown = data.findings.decouplings
    if not shown:
        reason = _why(data, Analysis.DECOUPLING, Analysis.VERDICTS)
        return _absent("decoupling", title, intro, reason)
    decoupled = [f"{p.arm} at {s.scale}: {p.kind}" for s in shown for p in s.arms if p.decoupled]
    blocks: list[Block] = [
        Row(tuple(figures.scatter(f"decoupling-{slug(s.scale)}", s, data.colours) for s in shown))
    ]
    blocks.append(
        Bullets(tuple(decoupled))
        if decoupled
        else Paragraph("No arm is decoupled: loss and downstream agree wherever either moved.")
    )
    blocks += [_sides(s) for s in shown]
    return Section("decoupling", title, intro, tuple(blocks))


def _sides(s: Decoupling) -> Grid:
    """Each arm's two sides at one scale as the figure plots them: what each claim rests on."""
    return Grid(
        f"At {s.scale}: each side moved (significant), flat (shown equivalent), not shown flat, "
        "or flat not testable (its MDE is too wide against the baseline's value).",
        ("arm", "decoupled", "loss", "downstream", f"{s.loss_metric} change ({BETTER_DOWN})",
         f"Δ {s.downstream_metric} ({BETTER_UP})"),
        tuple(
            (p.arm, p.kind or "no", p.loss_status, p.downstream_status,
             f"{signed(100 * p.loss_change, 2)}%", signed(p.downstream_delta))
            for p in s.arms
        ),
    )  # fmt: skip


def aggregates(data: ReportData) -> Section:
    title, intro = (
        "Across tasks (rliable's aggregates)",
        "The field's habit for a claim over many tasks (Agarwal et al. 2021, rliable): per "
        "scale, each arm's interquartile mean (IQM) of its task scores over every seed and "
        "task, and the probability that a run of the arm beats a run of the baseline on a task, "
        "both with stratified-bootstrap intervals (tasks kept, seeds resampled within each), "
        "and its performance profile: the share of its runs × tasks scoring above each "
        "threshold. A probability interval clear of 0.5 says the arm is better (or worse) on "
        "most tasks.",
    )
    shown = [a for a in data.findings.aggregates if len(a.tasks) >= 2]
    if not shown:
        reason = data.findings.why(Analysis.AGGREGATES) or (
            f"the results hold fewer than 2 per-task metrics ('<task>{TASK_SUFFIX}') with "
            "signal: the audit scored no multi-task downstream suite"
        )
        return _absent("aggregates", title, intro, reason)
    rows = tuple(
        Row(
            (
                figures.task_aggregate(f"aggregate-{slug(a.scale)}", a, data.colours),
                figures.performance_profiles(f"profile-{slug(a.scale)}", a, data.colours),
            )
        )
        for a in shown
    )
    level = f"{shown[0].confidence:.0%}"
    note = Paragraph(
        f"Intervals: {level} stratified bootstrap (stats.aggregate); an arm with one seed has "
        "none. `archaudit stats aggregate` prints the numbers and the almost-stochastic order."
    )
    notes = tuple(dict.fromkeys(f"{a.scale}: {n}" for a in shown for n in a.notes))
    return Section("aggregates", title, intro, (*rows, note, *((Bullets(notes),) if notes else ())))


# ---------------------------------------------------------------------------------------------
# 4. training curves


def curves(data: ReportData) -> Section:
    title, intro = (
        "Training curves",
        "Per scale: the validation loss the trainer recorded, the training loss over the last "
        "third of the run (zoomed: the early drop would hide the differences at the end), each "
        "as the arm's mean over seeds with the seeds' range as a band, and the gradient norm of "
        "every seed. A red X marks the step where a run diverged (its loss or gradient became "
        "infinite); diverged runs, and runs still training, are left out of the bands (a run in "
        "progress shows its gradient norm).",
    )
    if not data.curves:
        reason = (
            "a results CSV holds final numbers only, no training curves; run `archaudit report` "
            "on the audit directory to see them"
            if data.kind == "csv"
            else "no run of this audit has written training metrics yet"
        )
        return _absent("curves", title, intro, reason)
    blocks: list[Block] = []
    for scale in dict.fromkeys(c.scale for c in data.curves):
        blocks.append(Row(tuple(_scale_curves(data, scale))))
        blocks += _one_evaluation(data, scale)
    diverged = [
        f"{c.arm} at {c.scale}, seed {c.seed}: step {c.diverged_step}"
        for c in data.curves
        if c.diverged_step is not None
    ]
    if diverged:
        blocks.append(Bullets(tuple(diverged)))
    return Section("curves", title, intro, tuple(blocks))


def _one_evaluation(data: ReportData, scale: str) -> list[Block]:
    """Why the validation loss at `scale` is one dot per arm, when it is: each run evaluated
    once (the trainer evaluates every `recipe.eval_every` steps and at the end)."""
    steps = {step for band in bands(data.curves, scale, "val") for step in band.steps}
    if len(steps) != 1:
        return []
    return [
        Paragraph(
            f"Validation loss at {scale}: one evaluation per run (step {min(steps)}), so one dot "
            "per arm and no curve: these runs train fewer steps than `recipe.eval_every` (the "
            "trainer evaluates every eval_every steps and once at the end); a smaller "
            "eval_every draws the curve."
        )
    ]


def _scale_curves(data: ReportData, scale: str) -> list[Figure]:
    key, out = slug(scale), []
    panels = (
        ("val", f"curves-{key}-val", f"validation loss at {scale}", "validation loss"),
        ("train", f"curves-{key}-loss", f"training loss at {scale}, last third", "training loss"),
    )
    for kind, name, title, label in panels:
        drawn = bands(data.curves, scale, kind)
        if drawn:
            out.append(figures.loss_bands(name, title, label, drawn, data.colours))
    runs = [c for c in data.curves if c.scale == scale]
    out.append(figures.grad_norms(f"curves-{key}-grad", scale, runs, data.colours))
    return out


def routing(data: ReportData) -> Section:
    title, intro = (
        "Mixture-of-experts routing",
        "For every run with MoE layers, at its last training step: each layer's expert load as "
        "E × the busiest and the idlest expert's share of assignments (1 = balanced), the "
        "fraction of assignments dropped for capacity, the router's mean entropy (log E = "
        "uniform) and the steps where a layer's router collapsed (one expert chosen by >= 90% "
        "of the tokens, events.jsonl).",
    )
    if not data.routing:
        return _absent("routing", title, intro, "no run of this source has MoE layers")
    rows = tuple(
        (
            r.arm,
            r.scale,
            str(r.seed),
            str(r.step),
            "; ".join(
                f"{num(len(ld) * max(ld), 2)} / {num(len(ld) * min(ld), 2)}" for ld in r.load
            ),
            f"{r.dropped:.1%}",
            f"{num(r.entropy, 2)} of {num(math.log(len(r.load[0])), 2)}"
            if r.load
            else num(r.entropy, VALUE_DIGITS),
            ", ".join(f"step {s} (layer {layer})" for s, layer in r.collapses) or "none",
        )
        for r in data.routing
    )
    columns = ("arm", "scale", "seed", "step", "load max / min per layer", "dropped", "entropy")
    grid = Grid("Routing at the last step of each MoE run.", (*columns, "collapses"), rows)
    return Section("routing", title, intro, (grid,))


# ---------------------------------------------------------------------------------------------
# 5. rank shifts across scales


def transfer(data: ReportData) -> Section:
    title, intro = (
        "Rank shifts across scales",
        "Does the ranking of arms at the small scale predict the ranking at the large one? "
        "Each line joins an arm's rank at both scales (1 = best). Spearman's ρ is 1 when the "
        "order is kept, 0 when it is unrelated; its interval holds the true effects' ρ with 95% "
        "probability, or the ranking is not estimable when the arms are within noise.",
    )
    if not data.findings.transfers:
        return _absent("transfer", title, intro, _why(data, Analysis.TRANSFER, Analysis.VERDICTS))
    blocks: list[Block] = []
    for b in data.findings.transfers:
        if all(map(math.isfinite, b.spearman_interval)):
            blocks.append(figures.bump(_key("bump", b.metric, b.baseline), b, data.colours))
            rho = (
                f"Spearman ρ = {num(b.spearman, 2)} (95% interval "
                f"{num(b.spearman_interval[0], 2)} to {num(b.spearman_interval[1], 2)}), "
                f"Kendall τ = {num(b.kendall, 2)}"
            )
        else:
            blocks.append(
                Notice(
                    f"{b.metric}, {b.small} → {b.large}: rank shift not estimable, so no chart "
                    "is drawn: the arms are within noise of each other, and their crossings "
                    "would read as a reordering that the numbers do not show."
                )
            )
            rho = "Spearman ρ not estimable (the arms are too close to rank at 95%)"
        text = (
            f"{b.metric}, {b.small} → {b.large}: {rho}; Δ kept its sign for "
            f"{b.sign_preserved:.0%} of {len(b.arms)} arms."
        )
        if b.diverged_only_at_large:
            text += f" Diverged only at {b.large}: {', '.join(b.diverged_only_at_large)}."
        blocks.append(Paragraph(text))
        if b.notes:
            blocks.append(Bullets(tuple(b.notes)))
    return Section("transfer", title, intro, tuple(blocks))


# ---------------------------------------------------------------------------------------------
# 6. interactions


def interactions(data: ReportData) -> Section:
    title, intro = (
        "Interactions",
        "In a factorial audit, arms combine choices (a+b). The diagonal shows each choice's own "
        "effect; off the diagonal, what a pair does beyond the sum of its parts, both in units "
        "of σ (positive = better). The harmful-count fit asks whether the number of harmful "
        "choices alone predicts the result.",
    )
    if not data.findings.interactions:
        return _absent("interactions", title, intro, _why(data, Analysis.INTERACTIONS))
    blocks: list[Block] = []
    for h in data.findings.interactions:
        key = _key("heatmap", h.metric, h.baseline) + f"-{slug(h.scale)}"
        blocks.append(figures.heatmap(key, h))
        blocks.append(
            Grid(
                f"{h.metric} at {h.scale}: additive fit R² = {num(h.r2_additive)}, "
                f"harmful-count fit R² = {num(h.r2_harmful_count)}; harmful choices: "
                f"{', '.join(h.harmful) or 'none'}.",
                (
                    "arm",
                    "observed",
                    "additive prediction",
                    f"interaction in σ ({BETTER_UP})",
                    "harmful count",
                ),
                tuple(
                    (
                        c.arm,
                        num(c.observed, VALUE_DIGITS),
                        num(c.predicted, VALUE_DIGITS),
                        signed(c.interaction_sigmas, 2),
                        str(c.harmful_count),
                    )
                    for c in h.combinations
                ),
            )
        )
    return Section("interactions", title, intro, tuple(blocks))


# ---------------------------------------------------------------------------------------------
# 7. power


def power(data: ReportData) -> Section:
    title, intro = (
        "Power: what this audit could have seen",
        "How likely the audit was to give a verdict to an arm with a given true effect (in "
        "units of σ), for the design that ran: its arms' own seed counts, its test and "
        "correction, or the sequential loop's stopping rule (then simulated). The dotted line "
        "rises at the minimum detectable effect (MDE) to the target power; the MDE in the table "
        "is the same number. The last columns give the seeds per arm (baseline alike) that a "
        "balanced fixed design would need for each effect; effects under 2σ are within noise "
        "by rule and never declared.",
    )
    if not data.power:
        return _absent(
            "power",
            title,
            intro,
            _why(data, Analysis.VERDICTS)
            if not data.verdicts
            else "no judged family has 2 baseline seeds and a tested arm: power needs both",
        )
    drawn = tuple(
        figures.power_curves(f"power-{slug(metric)}", metric, cases)
        for metric in data.metrics
        if (cases := [c for c in data.power if c.metric == metric])
    )
    blocks: list[Block] = [Row(drawn)]
    methods = dict.fromkeys(f"{c.scale}: {c.curve.method}" for c in data.power)
    blocks.append(Bullets(tuple(methods)))
    effects = [x for x, _ in data.power[0].seeds_for]
    blocks.append(
        Grid(
            f"MDE at {data.power[0].curve.target:.0%} power per metric and scale, and seeds per "
            "arm a balanced design needs for an effect of k·σ.",
            (
                "metric",
                "scale",
                "σ",
                "seeds/arm",
                "baseline seeds",
                "arms (m)",
                "MDE (σ)",
                "MDE (metric units)",
                *(f"seeds for {x:g}σ" for x in effects),
            ),
            tuple(_power_row(c) for c in data.power),
        )
    )
    return Section("power", title, intro, tuple(blocks))


def _power_row(c: PowerCase) -> tuple[str, ...]:
    mde = c.curve.mde_sigmas
    return (
        c.metric,
        c.scale,
        num(c.sigma),
        "/".join(map(str, c.arm_seeds)),
        str(c.baseline_seeds),
        str(c.m),
        num(mde),
        mde_text(c.metric, mde * c.sigma) if mde is not None else num(None),
        *(str(k) if k is not None else "> 100" for _, k in c.seeds_for),
    )


SIGNAL_ROWS = 15


def signal_noise(data: ReportData) -> Section:
    title, intro = (
        "Signal and noise per metric",
        "Which numbers can decide anything at this scale: each metric's seed σ, the spread of "
        "the arm means, their ratio (SNR) beside what seed noise alone gives (1/√seeds), and "
        "the seeds per arm the largest arm effect would need. Choosing the primary metric "
        "after seeing this is selection: declare primaries in the audit file before the run.",
    )
    if data.signal is None:
        return _absent("signal", title, intro, _why(data, Analysis.SNR, Analysis.VERDICTS))
    rows = data.signal.metrics[:SIGNAL_ROWS]
    grid = Grid(
        f"The {len(rows)} most informative of {len(data.signal.metrics)} metric × scale rows.",
        ("metric", "scale", "σ", "spread", "SNR", "noise-only SNR", "max |Δ|/σ", "seeds for it"),
        tuple(
            (
                m.metric,
                m.scale,
                num(m.sigma),
                num(m.spread),
                num(m.snr),
                num(m.null_snr),
                num(m.largest_effect),
                str(m.seeds_for_largest_effect) if m.seeds_for_largest_effect else "never (< 2σ)",
            )
            for m in rows
        ),
    )
    return Section("signal", title, intro, (grid,))


# ---------------------------------------------------------------------------------------------
# 8. per-arm table


def arm_table(data: ReportData) -> Section:
    title, intro = (
        "Every arm in detail",
        "Per metric and scale: the verdict and what limits it (a grade below A with what it "
        "misses, a protocol duty the arm owes: R6 downstream, R7 a second scale, a candidate's "
        "second seed), the arm's mean ± seed SD, Δ against the baseline (positive = "
        "better) with its interval, the test used, p before and after the correction, the "
        "threshold p is compared with (the calibrated level α′, or the sequential loop's last "
        "boundary), the minimum detectable effect (MDE), the evidence grade (A needs "
        "3+ seeds, downstream scores above chance, 2+ scales, the shared recipe and a corrected "
        "test) and protocol warnings (each once: in the first table with its arm at its scale).",
    )
    if not data.verdicts:
        return _absent("arms", title, intro, _why(data, Analysis.VERDICTS))
    blocks: list[Block] = []
    said: set[str] = set()
    for v in data.verdicts:
        rows = []
        for a in v.arms:
            notes = [text for text in _notes_at(data, a.arm, v.scale) if text not in said]
            said.update(notes)
            rows.append(_arm_row(a, notes))
        blocks.append(
            Grid(
                f"{v.metric} at {v.scale} ({'lower' if v.lower_is_better else 'higher'} is "
                f"better): baseline {num(v.baseline_mean, VALUE_DIGITS)} from {v.baseline_n} "
                f"seeds, σ = {num(v.sigma)} ({v.sigma_dof} df), m = {v.m}, {v.correction} at "
                f"α = {v.alpha}; design error rate {_design_fwer(v)} (worst over the noise "
                f"panel and beyond {_panel_worst(v)}); threshold: the level {_threshold_of(v)}.",
                ARM_COLUMNS,
                tuple(rows),
            )
        )
        if v.notes:
            blocks.append(Bullets(v.notes))
    return Section("arms", title, intro, tuple(blocks))


def _threshold_of(v: Judgement) -> str:
    """What the detail table's threshold column holds for this family."""
    if v.sequential:
        return "the loop's last look's p is compared with (its O'Brien–Fleming boundary)"
    return "p_adj must fall below (the calibrated α′, at most α)"


def _has_interval(a: ArmVerdict) -> bool:
    return all(math.isfinite(end) for end in a.interval)


def _notes_at(data: ReportData, arm: str, scale: str) -> list[str]:
    """The arm's warnings that concern this row's scale (or every scale)."""
    return [text for at, text in data.protocol_notes.get(arm, ()) if at in (None, scale)]


def _arm_row(a: ArmVerdict, notes: Sequence[str]) -> tuple[str, ...]:
    warnings = [*(["R1: tuned (broke the shared recipe)"] if a.tuned else []), *notes]
    if a.n_diverged:
        warnings.append(f"{a.n_diverged} run(s) diverged (first at step {a.diverged_step})")
    sd = f" ± {num(a.sd)}" if math.isfinite(a.sd) else ""
    interval = (
        f"[{signed(a.interval[0])}, {signed(a.interval[1])}]" if _has_interval(a) else MISSING
    )
    return (
        a.arm,
        a.verdict,
        CAVEAT_SEPARATOR.join(a.caveats) or MISSING,
        signed(a.delta),
        interval,
        pvalue(a.p),
        pvalue(a.p_adj),
        pvalue(a.threshold),
        num(a.mde),
        a.grade,
        str(a.n_seeds),
        num(a.mean, VALUE_DIGITS) + sd,
        a.test or MISSING,
        a.family or MISSING,
        "; ".join(warnings) or MISSING,
    )


ARM_DELTA = f"Δ ({BETTER_UP})"
"""The arms table's Δ column: positive = better whatever the metric's own direction."""
ARM_COLUMNS = (
    "arm", "verdict", "limits", ARM_DELTA, "interval", "p", "p_adj", "threshold", "MDE", "grade",
    "seeds", "mean ± sd", "test", "family", "warnings",
)  # fmt: skip
"""The verdict and what limits it right after the arm: on a phone the table scrolls sideways,
and the first columns are what a reader sees without scrolling."""


# ---------------------------------------------------------------------------------------------
# 9. scope and 10. provenance


def scope(data: ReportData) -> Section:
    title, intro = (
        "Scope: what these conclusions hold for",
        "The verdicts hold for these scales, this data, these token budgets and this recipe. An "
        "effect at one scale is not a claim about another, and a tuned arm was not compared "
        "under the shared recipe.",
    )
    s = data.scope
    if not s.scales:
        return _absent("scope", title, intro, _why(data, Analysis.VERDICTS))
    rows = tuple(
        (
            sc.name,
            ", ".join(f"{k}={sc.model[k]}" for k in _MODEL_KEYS if k in sc.model) or MISSING,
            f"{sc.tokens:,}" if sc.tokens is not None else MISSING,
            str(sc.arms),
            "/".join(str(n) for n in sc.seeds),
        )
        for sc in s.scales
    )
    blocks: list[Block] = [
        Grid(
            "Scales",
            ("scale", "model", "training tokens per run", "arms", "seeds per arm"),
            rows,
        )
    ]
    if s.recipe:
        shown = {k: s.recipe[k] for k in _RECIPE_KEYS if k in s.recipe}
        blocks.append(Paragraph("Recipe: " + ", ".join(f"{k} = {v}" for k, v in shown.items())))
        blocks.append(
            Paragraph(
                f"Data: corpus {s.recipe.get('corpus', MISSING)}, tokenizer "
                f"{s.recipe.get('tokenizer', MISSING)}; downstream suite: {s.suite or 'none'}."
            )
        )
    else:
        blocks.append(
            Paragraph(
                "A results CSV records no recipe, data or token budget: the conclusions hold "
                "for whatever produced it, at the scales above."
            )
        )
    if s.tuned_arms:
        blocks.append(
            Paragraph("Tuned arms (outside the shared recipe): " + ", ".join(s.tuned_arms))
        )
    if any(total != active for _, _, total, active in s.params):
        blocks.append(
            Grid(
                "Parameters: total, and active (what one token multiplies by: k of E experts, a "
                "shared block once per layer; FLOPs per token use it)",
                ("arm", "scale", "total", "active"),
                tuple((a, sc, f"{t:,}", f"{act:,}") for a, sc, t, act in s.params),
            )
        )
    return Section("scope", title, intro, tuple(blocks))


_MODEL_KEYS = ("d_model", "n_layers", "n_heads", "context_length")
_RECIPE_KEYS = (
    "steps",
    "batch_tokens",
    "lr",
    "warmup_frac",
    "min_lr_ratio",
    "weight_decay",
    "grad_clip",
    "precision",
    "data_seed",
)


def provenance(data: ReportData) -> Section:
    title, intro = (
        "Provenance",
        "What produced these results, so that anyone can check or repeat them.",
    )
    p = data.provenance
    rows: list[tuple[str, str]] = [
        ("results", p.source),
        ("results sha256", p.source_sha256 or MISSING),
        ("recipe hash", ", ".join(p.recipe_hashes) or "not recorded (results CSV)"),
    ]
    for i, env in enumerate(p.environments):
        suffix = f" ({i + 1})" if len(p.environments) > 1 else ""
        rows += [(f"{key}{suffix}", _text(value)) for key, value in env.items()]
    if not p.environments:
        rows.append(("runs' environment", "not recorded (results CSV or no run started)"))
    rows += [(f"report: {k}", v) for k, v in _generator().items()]
    rows.append(("command", p.command or MISSING))
    return Section("provenance", title, intro, (Grid("", ("what", "value"), tuple(rows)),))


def _text(value: Any) -> str:
    return MISSING if value is None else str(value)


def _generator() -> dict[str, str]:
    import matplotlib

    import archaudit

    return {"archaudit": archaudit.__version__, "matplotlib": matplotlib.__version__}


# ---------------------------------------------------------------------------------------------
# 7b. at the target scale (stats predict)

_TARGET_TITLE = "At the target scale"
_TARGET_INTRO = (
    "What the verdicts at the trained scales say about the scale the audit is meant for, which "
    "was never trained: each arm's Δ (Δ > 0 means better: a lower loss, as everywhere in this "
    "report) carried along the ladder of trained scales, with a prediction interval, the "
    "probability that its sign there is the one seen at the largest trained scale, and its "
    "predicted rank. The interval follows the arm's own slope along the ladder, wide enough for "
    "it to fade or to go on as a line; the prediction is the largest scale's Δ held inside it, "
    "or a stack of fitted curves where that beat the largest scale's Δ significantly in the "
    "backtest on a ladder at its seed-noise floor (the line below says which). The backtest "
    "predicts each trained scale from the smaller ones, and the line below says how often the "
    "intervals held there."
)


def target(data: ReportData) -> Section:
    p = data.prediction
    if p is None:
        reason = data.findings.why(Analysis.TARGET) or "the audit file names no [target] scale"
        return Section("target", _TARGET_TITLE, _TARGET_INTRO, absent=reason)
    target = p.ladder.target
    head = Paragraph(
        f"{p.metric} at {target.name} ({target.params:,.0f} parameters, {target.tokens:,.0f} "
        f"tokens), from {len(p.ladder.scales)} trained scales; {p.confidence:.0%} intervals; "
        f"prediction: {p.how()}."
    )
    blocks: list[Block] = [head, _grid(p, _largest_verdicts(data, p))]
    if p.curves:
        blocks.append(target_figures.ladder_plot("target-ladder", p, data.colours))
    if p.candidates:
        blocks.append(target_figures.backtest_plot("target-backtest", p))
    blocks.append(Bullets(tuple(b.summary() for b in p.backtests()) + p.notes))
    return Section("target", _TARGET_TITLE, _TARGET_INTRO, tuple(blocks))


def _largest_verdicts(data: ReportData, p: Prediction) -> dict[str, str]:
    largest = p.ladder.scales[-1].name
    found: list[Judgement] = [
        v for v in data.verdicts if v.metric == p.metric and v.scale == largest
    ]
    return {a.arm: a.verdict for a in found[0].arms} if found else {}


def _grid(p: Prediction, verdicts: dict[str, str]) -> Grid:
    largest = p.ladder.scales[-1].name
    return Grid(
        f"Each arm at {largest} (the largest trained scale) and at {p.ladder.target.name}.",
        (
            "arm",
            f"verdict at {largest}",
            f"Δ at {largest} ({BETTER_UP})",
            f"Δ̂ at target ({BETTER_UP})",
            "rank (could be)",
        ),
        tuple(
            (a.arm, verdicts.get(a.arm, "–"), signed(a.delta_largest), *_at_target(a))
            for a in p.arms
        ),
    )


def _at_target(a: TargetPrediction) -> tuple[str, str]:
    if not a.estimable:
        return f"not estimable ({a.reason})", "–"
    low, high = a.interval
    rank_low, rank_high = a.rank_interval
    return (
        f"{signed(a.delta)} [{signed(low)}, {signed(high)}], P(sign holds) {a.p_sign_holds:.2f}",
        f"{a.rank} ({rank_low:.0f}–{rank_high:.0f})",
    )


def stability_section(data: ReportData) -> Section:
    """The stress test (report/stability.py)."""
    return stability(data.stress, data.colours)


SECTIONS: tuple[Callable[[ReportData], Section], ...] = (
    answer,
    noise_floor,
    decoupling,
    aggregates,
    curves,
    stability_section,
    routing,
    transfer,
    target,
    interactions,
    power,
    signal_noise,
    arm_table,
    scope,
    provenance,
)
"""The report's sections in reading order (issue 11)."""
