"""`archaudit diagnose bottleneck|attention|prune|heads MODEL ...`, `diagnose focus AUDIT_DIR` and
`diagnose task FILE`: the diagnostics of `archaudit.diagnose`, each writing JSON and a figure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from archaudit.audit.setup.spec import EvalSpec
from archaudit.cli.base.app import app
from archaudit.cli.base.options import (
    DEFAULT_BASELINE,
    Baseline,
    Bootstrap,
    Device,
    Flags,
    Scale,
    emit,
    in_range,
    output_flags,
    torch_device,
    with_flags,
)
from archaudit.errors import ConfigError
from archaudit.formatting import VALUE_DIGITS, interval, num, pvalue, signed
from archaudit.ranges import COUNT, SEED, Range

if TYPE_CHECKING:
    from archaudit.diagnose.bottleneck import Distribution
    from archaudit.diagnose.run import PruneResult

diagnose_app = typer.Typer(
    no_args_is_help=True,
    help="Diagnostics on a run, checkpoint, Hugging Face directory or .gguf file: LM-head "
    "gradient bottleneck, attention sinks, layer pruning × test-time scaling, head masking.",
)
app.add_typer(diagnose_app, name="diagnose")

Model = Annotated[
    str,
    typer.Argument(
        help="Run/checkpoint directory, Hugging Face directory, .gguf file, or KIND:PATH."
    ),
]
MAX_TOKENS = 1 << 24
"""Tokens one diagnostic measures on, at most (its activations are held per token)."""
TOKENS = Range(1, MAX_TOKENS)
POSITIVE = Range(0, low_open=True)


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """What a model diagnostic measures on and where it writes: the options bottleneck,
    attention, heads and prune share (each diagnostic's own defaults live in its function)."""

    data: Path
    """UTF-8 text file to measure on."""
    tokens: int | None = field(default=None, metadata={"range": TOKENS})
    """Predicted tokens to measure on [default: the diagnostic's own]."""
    window: int | None = field(default=None, metadata={"range": TOKENS})
    """Tokens per row, capped by the context [default: the diagnostic's own]."""
    batch_size: int | None = field(default=None, metadata={"range": TOKENS})
    """Rows per forward pass [default: the diagnostic's own]."""

    def __post_init__(self) -> None:
        for name in ("tokens", "window", "batch_size"):
            value = getattr(self, name)
            if value is not None and not 1 <= value <= MAX_TOKENS:
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{flag} {value} must be in [1, {MAX_TOKENS:,}]")

    def keywords(self, device: str) -> dict[str, Any]:
        """The diagnostic's keyword arguments: what was given, on `device`."""
        given = {k: getattr(self, k) for k in ("tokens", "window", "batch_size")}
        return {k: v for k, v in given.items() if v is not None} | {"device": torch_device(device)}


@dataclass(frozen=True, kw_only=True)
class Output:
    """Where a diagnostic writes its JSON and figure."""

    out: Path | None = None
    """Folder for the JSON and figure [default: <run>/diagnostics, or ./diagnostics/<model>
    for HF and GGUF models]."""
    no_figure: bool = False
    """Write the JSON only."""

    def keywords(self) -> dict[str, Any]:
        return {"out": self.out, "figure": not self.no_figure}


Measure = Annotated[Measurement, Flags(Measurement)]
Written = Annotated[Output, Flags(Output)]


@dataclass(frozen=True, kw_only=True)
class Reasoning:
    """The generated reasoning task: what `prune --tts` samples on and `task` writes."""

    terms: int = field(default=4, metadata={"range": COUNT})
    """Terms per reasoning item."""
    seed: int = field(default=0, metadata={"range": SEED})
    """Seed of the reasoning items (and of sampling)."""


@dataclass(frozen=True, kw_only=True)
class Sampling:
    """Test-time scaling curves on the generated reasoning task (`prune --tts`)."""

    tts: bool = False
    """Test-time scaling curves on the generated reasoning task."""
    tts_items: int = field(default=100, metadata={"range": COUNT})
    """Reasoning items."""
    samples: int = field(default=16, metadata={"range": COUNT})
    """Largest N (a power of 2)."""
    temperature: float = field(default=1.0, metadata={"range": POSITIVE})
    """Sampling τ."""


@dataclass(frozen=True, kw_only=True)
class Pruning:
    """Which layers `prune` removes, and the recovery fine-tuning after."""

    method: str = "block-influence"
    """block-influence | angular | tail | laco."""
    layers: int = field(default=1, metadata={"range": COUNT})
    """K: layers to remove."""
    recover_steps: int = field(default=0, metadata={"range": Range(0)})
    """Recovery fine-tuning steps on --data (0: none)."""
    recover_lr: float = field(default=1e-3, metadata={"range": POSITIVE})
    """Its learning rate."""
    lora: int | None = field(default=None, metadata={"range": COUNT})
    """Recover with LoRA of this rank (needs peft) instead of full fine-tuning."""


def _finish(result: Any, written: Any, json_: bool, lines: list[str]) -> None:
    from archaudit.progress import console

    if json_:
        emit(result)
        return
    for line in lines:
        typer.echo(line)
    where = f"{written.json}" + (f", {written.figure}" if written.figure else "")
    console.print(f"wrote {where}", highlight=False)


@diagnose_app.command("bottleneck")
@output_flags
@with_flags
def bottleneck(
    model: Model,
    *,
    measure: Measure,
    output: Written,
    device: Device = "",
    json_: bool = False,
) -> None:
    """The LM-head gradient bottleneck: the share of ‖softmax(z) − onehot(y)‖² outside the column
    space of the unembedding (arXiv 2603.10145), per token over --data."""
    from archaudit.diagnose import diagnose_bottleneck

    result, written = diagnose_bottleneck(
        model, measure.data, **measure.keywords(device), **output.keywords()
    )
    f, c = result.suppressed_fraction, result.cosine
    _finish(
        result,
        written,
        json_,
        [
            f"{result.model}: {result.tokens} tokens, V={result.vocab_size}, D={result.d_model}, "
            f"{'tied' if result.tied else 'untied'} head",
            f"suppressed fraction  {_spread(f)}  (pooled "
            f"{num(result.suppressed_fraction_pooled)}; random direction "
            f"{num(result.chance_fraction)})",
            f"cosine(g, Pg)        {_spread(c)}",
        ],
    )


@diagnose_app.command("attention")
@output_flags
@with_flags
def attention(
    model: Model,
    *,
    measure: Measure,
    output: Written,
    sink_tokens: Annotated[
        int,
        typer.Option(
            "--sink-tokens",
            help="k: the first k positions count as the sink.",
            callback=in_range(0, MAX_TOKENS),
        ),
    ] = 1,
    device: Device = "",
    json_: bool = False,
) -> None:
    """Attention focus per layer and head: sink mass on the first k tokens, entropy, and mass by
    distance, with a heatmap."""
    from archaudit.diagnose import diagnose_attention

    result, written = diagnose_attention(
        model,
        measure.data,
        sink_tokens=sink_tokens,
        **measure.keywords(device),
        **output.keywords(),
    )
    per_layer = " ".join(num(m, 2) for m in result.sink_mass_per_layer)
    _finish(
        result,
        written,
        json_,
        [
            f"{result.model}: {result.tokens} positions, window {result.window}",
            f"sink mass (first {result.sink_tokens}) per layer: {per_layer}",
            f"mean over layers and heads: {num(result.sink_mass_mean)}",
        ],
    )


@diagnose_app.command("heads")
@output_flags
@with_flags
def heads(
    model: Model,
    *,
    measure: Measure,
    output: Written,
    device: Device = "",
    json_: bool = False,
) -> None:
    """Loss increase when each attention head is masked, per layer, with a heatmap."""
    from archaudit.diagnose import diagnose_heads

    result, written = diagnose_heads(
        model, measure.data, **measure.keywords(device), **output.keywords()
    )
    per_layer = " ".join(signed(m) for m in result.layer_increase)
    _finish(
        result,
        written,
        json_,
        [
            f"{result.model}: base loss {num(result.base_loss, VALUE_DIGITS)} nats/token over "
            f"{result.tokens} tokens",
            f"mean loss increase per layer: {per_layer}",
        ],
    )


@diagnose_app.command("prune")
@output_flags
@with_flags
def prune(
    model: Model,
    *,
    measure: Measure,
    output: Written,
    pruning: Annotated[Pruning, Flags(Pruning)],
    evaluation: Annotated[EvalSpec, Flags(EvalSpec, defaults={"suite": ""})],
    sampling: Annotated[Sampling, Flags(Sampling)],
    reasoning: Annotated[Reasoning, Flags(Reasoning)],
    device: Device = "",
    json_: bool = False,
) -> None:
    """Score layers, remove K, and re-evaluate: held-out loss, optionally a suite and test-time
    scaling (best-of-N, majority vote, budget), optionally after recovery fine-tuning."""
    from archaudit.diagnose import TTSOptions, diagnose_prune

    samples = sampling.samples
    if samples & (samples - 1):
        raise ConfigError(f"--samples {samples}: use a power of 2 (1, 2, 4, ..., 16)")
    options = None
    if sampling.tts:
        ns = tuple(2**i for i in range(samples.bit_length()))
        options = TTSOptions(
            items=sampling.tts_items, ns=ns, temperature=sampling.temperature,
            terms=reasoning.terms, seed=reasoning.seed,
        )  # fmt: skip
    result, written = diagnose_prune(
        model,
        measure.data,
        method=pruning.method,
        layers=pruning.layers,
        suite=evaluation.suite or None,
        limit=evaluation.limit,
        tts=options,
        recover_steps=pruning.recover_steps,
        recover_lr=pruning.recover_lr,
        lora_rank=pruning.lora,
        **measure.keywords(device),
        **output.keywords(),
    )
    _finish(result, written, json_, _prune_lines(result, pruning.method))


def _prune_lines(result: PruneResult, method: str) -> list[str]:
    """What pruning removed, then each model state's held-out loss (and suite, TTS curves)."""
    merged = result.plan.merged_into
    lines = [
        f"{result.model}: {method} removes layers {list(result.plan.removed)}"
        + (f" (merged into {merged})" if merged is not None else "")
    ]
    for state in result.states:
        held = num(state.heldout_loss, VALUE_DIGITS)
        line = f"  {state.name:<9} {state.layers} layers  held-out {held} nats"
        if state.downstream_avg is not None:
            line += f"  downstream_avg {num(state.downstream_avg, VALUE_DIGITS)}"
        lines.append(line)
        if state.tts is not None:
            t = state.tts
            lines.append("    best-of-N " + _pairs(t.ns, t.best_of_n))
            lines.append("    majority  " + _pairs(t.ns, t.majority_vote))
            lines.append("    budget    " + _pairs(t.budgets, t.budget_accuracy))
    return lines


def _pairs(xs: list[int], ys: list[float]) -> str:
    return "  ".join(f"{x}:{num(y)}" for x, y in zip(xs, ys, strict=True))


def _spread(d: Distribution) -> str:
    """A distribution's mean and quartiles."""
    return f"mean {num(d.mean)}  quartiles {num(d.q25)} {num(d.median)} {num(d.q75)}"


@diagnose_app.command("focus")
@output_flags
@with_flags
def focus(
    audit_dir: Annotated[
        Path, typer.Argument(help="Audit directory whose runs have diagnostics/attention.json.")
    ],
    metric: Annotated[
        str, typer.Option("--metric", help="Retrieval metric of the audit's results.")
    ] = "needle",
    baseline: Baseline = DEFAULT_BASELINE,
    scale: Scale = None,
    *,
    bootstrap: Annotated[Bootstrap, Flags(Bootstrap)],
    output: Written,
    json_: bool = False,
) -> None:
    """Across an audit's arms: Spearman ρ (bootstrap interval) between first-token sink mass and
    long-context retrieval, and the sink mass of QK-norm arms minus the baseline's."""
    from archaudit.audit.grid.store import read_results
    from archaudit.diagnose import diagnose_focus
    from archaudit.rundir import is_audit_dir

    result, written = diagnose_focus(
        audit_dir,
        results=read_results(audit_dir) if is_audit_dir(audit_dir) else None,
        metric=metric,
        baseline=baseline,
        scale=scale,
        n_boot=bootstrap.n_boot,
        seed=bootstrap.seed,
        **output.keywords(),
    )
    low, high = result.spearman_interval
    lines = [
        f"{len(result.arms)} arms: Spearman ρ(sink mass, {metric}) = {num(result.spearman)} "
        f"{interval((low, high))}"
    ]
    for c in result.qk_norm_vs_baseline:
        lines.append(
            f"  {c.arm}: sink mass {signed(c.difference)} vs {baseline} "
            f"(Welch p = {pvalue(c.p_value)})"
        )
    _finish(result, written, json_, lines)


@diagnose_app.command("task")
@output_flags
@with_flags
def task(
    out: Annotated[Path, typer.Argument(help="Text file to write.")],
    chars: Annotated[
        int,
        typer.Option("--chars", help="Characters of training text.", callback=in_range(1)),
    ] = 1_000_000,
    *,
    reasoning: Annotated[Reasoning, Flags(Reasoning)],
    json_: bool = False,
) -> None:
    """Write a training corpus of the reasoning task that `prune --tts` measures (train on it
    with `archaudit train --corpus FILE`; the curves' items come from a different stream)."""
    from archaudit.diagnose import reasoning_corpus
    from archaudit.files import atomic_write_text

    text = reasoning_corpus(chars, seed=reasoning.seed, terms=reasoning.terms)
    atomic_write_text(out, text)
    if json_:
        emit({"path": out, "chars": len(text)})
    else:
        typer.echo(f"wrote {out} ({len(text):,} characters)")
