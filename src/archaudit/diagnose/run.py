"""Each diagnostic end to end: load the model, read the data, measure, write JSON and a figure
into the run's store. The CLI and notebook users call these."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archaudit.diagnose import figures
from archaudit.diagnose.access import ModelView, view_of
from archaudit.diagnose.attention import AttentionResult, attention_focus
from archaudit.diagnose.bottleneck import BottleneckResult, gradient_bottleneck
from archaudit.diagnose.focus import FocusResult, collect_runs, focus_across_arms
from archaudit.diagnose.heads import HeadsResult, head_importance
from archaudit.diagnose.pruning import (
    LayerScores,
    PrunePlan,
    choose_layers,
    layer_scores,
    pruned_view,
)
from archaudit.diagnose.reasoning import reasoning_items
from archaudit.diagnose.recover import Recovery, recover
from archaudit.diagnose.store import diagnostics_dir, write_result
from archaudit.diagnose.tts import TTSCurves, tts_curves
from archaudit.diagnose.windows import read_text, token_windows
from archaudit.evals.heldout import heldout_loss
from archaudit.names import BASELINE
from archaudit.stats.records.serialize import JsonResult

if TYPE_CHECKING:
    import torch

    from archaudit.stats import Table


@dataclass(frozen=True)
class Written:
    json: Path
    figure: Path | None


def _rows(view: ModelView, data: str | Path, tokens: int, window: int) -> torch.Tensor:
    return token_windows(view, read_text(data), tokens=tokens, window=window)


def diagnose_bottleneck(
    model: Any,
    data: str | Path,
    *,
    tokens: int = 4096,
    window: int = 256,
    batch_size: int = 8,
    out: str | Path | None = None,
    device: str = "cpu",
    figure: bool = True,
) -> tuple[BottleneckResult, Written]:
    view = view_of(model, device=device)
    result = gradient_bottleneck(view, _rows(view, data, tokens, window), batch_size=batch_size)
    folder = diagnostics_dir(model, out)
    fractions, cosines = result._per_token
    png = folder / "bottleneck.png"
    panels = {"suppressed fraction 1 − ‖Uᵀg‖²/‖g‖²": fractions, "cos(g, UUᵀg)": cosines}
    return result, Written(
        write_result(folder, "bottleneck", result),
        figures.histograms(panels, png) if figure else None,
    )


def diagnose_attention(
    model: Any,
    data: str | Path,
    *,
    tokens: int = 2048,
    window: int = 256,
    sink_tokens: int = 1,
    batch_size: int = 4,
    out: str | Path | None = None,
    device: str = "cpu",
    figure: bool = True,
) -> tuple[AttentionResult, Written]:
    view = view_of(model, device=device)
    rows = _rows(view, data, tokens, window)
    result = attention_focus(view, rows, sink_tokens=sink_tokens, batch_size=batch_size)
    folder = diagnostics_dir(model, out)
    panels = {
        f"sink mass (first {sink_tokens} token{'s' * (sink_tokens > 1)})": result.sink_mass,
        "entropy (nats)": result.entropy,
    }
    png = folder / "attention.png"
    return result, Written(
        write_result(folder, "attention", result),
        figures.heatmaps(panels, png, xlabel="head", ylabel="layer") if figure else None,
    )


def diagnose_heads(
    model: Any,
    data: str | Path,
    *,
    tokens: int = 1024,
    window: int = 256,
    batch_size: int = 8,
    out: str | Path | None = None,
    device: str = "cpu",
    figure: bool = True,
) -> tuple[HeadsResult, Written]:
    view = view_of(model, device=device)
    result = head_importance(view, _rows(view, data, tokens, window), batch_size=batch_size)
    folder = diagnostics_dir(model, out)
    png = folder / "heads.png"
    panels = {"loss increase when the head is masked (nats/token)": result.loss_increase}
    return result, Written(
        write_result(folder, "heads", result),
        figures.heatmaps(panels, png, xlabel="head", ylabel="layer") if figure else None,
    )


@dataclass(frozen=True)
class ModelState(JsonResult):
    """One version of the model (full, pruned, recovered) and its evaluations."""

    name: str
    layers: int
    heldout_loss: float
    heldout_bits_per_byte: float
    downstream_avg: float | None = None
    tts: TTSCurves | None = None
    recovery: Recovery | None = None


@dataclass(frozen=True)
class PruneResult(JsonResult):
    model: str
    scores: LayerScores
    plan: PrunePlan
    states: list[ModelState]
    """full, pruned, and (with recovery) recovered."""


@dataclass(frozen=True)
class TTSOptions:
    items: int = 100
    ns: Sequence[int] = (1, 2, 4, 8, 16)
    temperature: float = 1.0
    terms: int = 4
    seed: int = 0


def _evaluate_state(
    view: ModelView,
    name: str,
    text: str,
    *,
    tokens: int,
    suite: str | None,
    limit: int | None,
    tts: TTSOptions | None,
    recovery: Recovery | None = None,
) -> ModelState:
    held = heldout_loss(view.scoring, text, token_budget=tokens, show_progress=False)
    downstream = None
    if suite is not None:
        from archaudit.evals import evaluate

        downstream = evaluate(view.scoring, suite, limit=limit, show_progress=False).downstream_avg
    curves = None
    if tts is not None:
        items = reasoning_items(tts.items, seed=tts.seed, terms=tts.terms)
        curves = tts_curves(view, items, ns=tts.ns, temperature=tts.temperature, seed=tts.seed)
    return ModelState(
        name, len(view.layers()), held.loss, held.bits_per_byte, downstream, curves, recovery
    )


def diagnose_prune(
    model: Any,
    data: str | Path,
    *,
    method: str = "block-influence",
    layers: int = 1,
    tokens: int = 2048,
    window: int = 256,
    batch_size: int = 8,
    suite: str | None = None,
    limit: int | None = None,
    tts: TTSOptions | None = None,
    recover_steps: int = 0,
    recover_lr: float = 1e-3,
    lora_rank: int | None = None,
    out: str | Path | None = None,
    device: str = "cpu",
    figure: bool = True,
) -> tuple[PruneResult, Written]:
    view = view_of(model, device=device)
    # Layers are scored (and recovery trains) on the first half; held-out loss reads the second.
    text = read_text(data)
    calibration, text = text[: len(text) // 2], text[len(text) // 2 :]
    rows = token_windows(view, calibration, tokens=tokens, window=window)
    scores = layer_scores(view, rows, batch_size=batch_size)
    plan = choose_layers(method, scores, layers)
    pruned = pruned_view(view, plan)
    evaluate = functools.partial(
        _evaluate_state, text=text, tokens=tokens, suite=suite, limit=limit, tts=tts
    )
    states = [evaluate(view, "full"), evaluate(pruned, "pruned")]
    if recover_steps:
        recovered = pruned.rebuilt(range(len(pruned.layers())))
        done = recover(
            recovered,
            rows,
            steps=recover_steps,
            lr=recover_lr,
            batch_size=batch_size,
            lora_rank=lora_rank,
        )
        states.append(evaluate(recovered, "recovered", recovery=done))
    result = PruneResult(view.name, scores, plan, states)
    folder = diagnostics_dir(model, out)
    return result, Written(
        write_result(folder, "prune", result),
        _prune_figure(result, folder / "prune.png") if figure else None,
    )


def _prune_figure(result: PruneResult, path: Path) -> Path:
    L = len(result.scores.block_influence)
    n = len(result.plan.removed) + (result.plan.merged_into is not None)
    runs = result.scores.run_distance(max(n, 1))
    panels: dict[str, Any] = {
        "layer scores": (
            "layer",
            {
                "block influence": (list(range(L)), result.scores.block_influence),
                f"angular distance, run of {n}": (list(range(len(runs))), runs),
            },
        ),
    }
    tts = {s.name: s.tts for s in result.states if s.tts is not None}
    if tts:
        panels["best-of-N (oracle)"] = ("N", {k: (c.ns, c.best_of_n) for k, c in tts.items()})
        panels["majority vote"] = ("N", {k: (c.ns, c.majority_vote) for k, c in tts.items()})
        panels["budget"] = (
            "scratchpad tokens",
            {k: (c.budgets, c.budget_accuracy) for k, c in tts.items()},
        )
    return figures.curves(panels, path, log_x=("best-of-N (oracle)", "majority vote"))


def diagnose_focus(
    audit_dir: str | Path,
    *,
    metric: str = "needle",
    baseline: str = BASELINE,
    scale: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    out: str | Path | None = None,
    figure: bool = True,
    results: Table | None = None,
) -> tuple[FocusResult, Written]:
    """Sink mass vs retrieval across the arms of an audit whose runs have attention.json;
    `results`: the audit's results table (default: its results.csv)."""
    audit = Path(audit_dir)
    result = focus_across_arms(
        collect_runs(audit, metric, scale, results),
        metric=metric,
        baseline=baseline,
        n_boot=n_boot,
        seed=seed,
    )
    folder = Path(out) if out is not None else audit / "diagnostics"
    points = {a.arm: (a.sink_mass, a.retrieval) for a in result.arms}
    title = (
        f"ρ = {result.spearman:.2f} [{result.spearman_interval[0]:.2f}, "
        f"{result.spearman_interval[1]:.2f}]"
    )
    png = folder / "focus.png"
    return result, Written(
        write_result(folder, "focus", result),
        figures.scatter(points, png, xlabel="first-token sink mass", ylabel=metric, title=title)
        if figure
        else None,
    )
