"""Typed, frozen configuration: the model (`ModelConfig`) and the shared training recipe (`Recipe`).

Both load from TOML (`[model]` and `[recipe]` tables) and take `--set section.key=value`
overrides. Every mistake is a `ConfigError` naming the key, the bad value and what is allowed.
The recipe is hashed (`recipe_hash`) so that an audit can refuse arms trained under another
recipe (protocol rule R1). This module must stay free of torch so that planning and statistics
never pay for importing it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archaudit.data.shards import corpus_identity
from archaudit.errors import ConfigError, did_you_mean

Scalar = int | float | str | bool


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """A decoder-only Transformer. Defaults are the baseline of docs/modifications.md.

    String fields name a component in the model's slot registries (`archaudit.model.slots`);
    they are checked when the model is built, with a did-you-mean on a typo.
    """

    vocab_size: int = 256
    """Tokenizer vocabulary size (256 for the default byte-level tokenizer)."""
    context_length: int = 256
    """Training sequence length in tokens."""
    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int | None = None
    """Key/value heads; fewer than `n_heads` is grouped-query attention. None = `n_heads`."""
    head_dim: int | None = None
    """Width of one head. None = d_model // n_heads."""
    mlp_hidden: int | None = None
    """MLP hidden width. None = 8/3·d rounded up to 16 for gated MLPs, 4·d otherwise."""

    # --- slots: each names a registered component -------------------------------------------
    norm: str = "rmsnorm"
    """Normalisation layer: rmsnorm | layernorm | ..."""
    residual: str = "pre"
    """How a sublayer joins the residual stream: pre | post | sandwich | deepnorm | ..."""
    mlp_residual: str | None = None
    """Override `residual` for the MLP sublayer only (HybridNorm uses post-norm there)."""
    stream: str = "standard"
    """The residual stream itself: standard | hyper | attn_res."""
    attention: str = "standard"
    """Attention module: standard | differential."""
    score: str = "softmax"
    """Attention score function: softmax | softpick | ssmax | sigmoid | sink_softmax | ..."""
    position: str = "rope"
    """Positional scheme: rope | alibi | nope | sinusoidal | learned."""
    mlp: str = "swiglu"
    """MLP: swiglu | geglu | reglu | relu2 | gelu."""
    head: str = "linear"
    """Output head: linear | mos (mixture of softmaxes)."""

    # --- slot parameters ----------------------------------------------------------------------
    norm_eps: float = 1e-5
    rope_base: float = 10000.0
    rope_fraction: float = 1.0
    """Fraction of each head's dimensions that RoPE rotates (partial RoPE < 1)."""
    qk_norm: bool = False
    qkv_norm: bool = False
    """RMSNorm on queries, keys and values (HybridNorm)."""
    logit_softcap: float | None = None
    attn_gate: str | None = None
    """Output gate on attention before W_O: None | elementwise | headwise."""
    value_residual: bool = False
    window: int | None = None
    """Sliding-window size for windowed layers; None = full attention everywhere."""
    global_every: int = 4
    """With `window`: every `global_every`-th layer keeps full attention (3 of 4 windowed)."""
    hyper_streams: int = 4
    """Number of parallel residual streams for `stream = "hyper"`."""
    layerscale_init: float = 0.1
    tie_embeddings: bool = False
    mos_experts: int = 4
    z_loss: float = 0.0
    """Coefficient of the (log Σ e^z)² auxiliary loss (PaLM uses 1e-4)."""
    mtp_heads: int = 0
    """Extra heads predicting tokens t+2, t+3, ... (multi-token prediction)."""
    mtp_weight: float = 0.3

    # --- initialisation ----------------------------------------------------------------------
    init_std: float = 0.02
    scale_residual_init: bool = True
    """Residual output projections start at init_std/√(2L) (GPT-2)."""
    dropout: float = 0.0
    extra: Mapping[str, Scalar] = field(default_factory=dict)
    """Free parameters for user-registered components (plugins)."""

    def __post_init__(self) -> None:
        _positive(self, "vocab_size", "context_length", "d_model", "n_layers", "n_heads")
        _positive(self, "hyper_streams", "mos_experts", "global_every")
        if self.n_kv_heads is not None and (self.n_kv_heads < 1 or self.n_heads % self.n_kv_heads):
            raise ConfigError(
                f"model.n_kv_heads = {self.n_kv_heads} must divide model.n_heads = {self.n_heads}"
            )
        if self.head_dim is None and self.d_model % self.n_heads:
            raise ConfigError(
                f"model.d_model = {self.d_model} is not divisible by model.n_heads = "
                f"{self.n_heads}; choose another n_heads or set model.head_dim"
            )
        if not 0.0 <= self.rope_fraction <= 1.0:
            raise ConfigError(f"model.rope_fraction = {self.rope_fraction} must be in [0, 1]")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"model.dropout = {self.dropout} must be in [0, 1)")
        if self.z_loss < 0 or self.mtp_heads < 0:
            raise ConfigError("model.z_loss and model.mtp_heads must be >= 0")
        if self.window is not None and self.window < 1:
            raise ConfigError(f"model.window = {self.window} must be >= 1 (or unset)")
        if self.attn_gate not in (None, "elementwise", "headwise"):
            raise ConfigError(
                f"model.attn_gate = {self.attn_gate!r}; allowed: 'elementwise', 'headwise'"
            )

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.d_model // self.n_heads


_OPERATIONAL = {"hashed": False}  # metadata: does not change what is trained


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """The shared training recipe (R1): identical for every arm of an audit, and hashed.

    Fields marked operational (logging, checkpoint cadence, device) do not enter the hash.
    """

    steps: int = 300
    batch_tokens: int = 4096
    """Tokens per optimizer step, summed over gradient accumulation and data-parallel ranks.
    Counted in tokens so that a shorter context (more, shorter sequences) keeps the recipe."""
    grad_accumulation: int = 1
    """Micro-steps per optimizer step (the batch is split evenly among them)."""
    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    """Cosine decay ends at lr · min_lr_ratio."""
    warmup_frac: float = 0.05
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    adam_eps: float = 1e-8
    grad_clip: float = 1.0
    precision: str = "auto"
    """auto (bf16 autocast on CUDA, fp32 on CPU) | bf16 | fp32. Master weights stay fp32."""
    tokenizer: str = "byte"
    """byte | bpe:<vocab_size> | gpt2:<dir with vocab.json and merges.txt> | hf:<dir>."""
    corpus: str = "synthetic"
    """synthetic (the embedded default language) or a path to a .txt / .jsonl file."""
    corpus_chars: int = 2_000_000
    """Characters of synthetic corpus to generate (ignored for file corpora)."""
    val_fraction: float = 0.05
    data_seed: int = 1234
    vary_data_order: bool = False
    """False (default): every seed sees the same batches and only init changes; True: the run
    seed also shuffles the data order."""
    eval_every: int = field(default=100, metadata=_OPERATIONAL)
    eval_batches: int = field(default=4, metadata=_OPERATIONAL)
    checkpoint_every: int = field(default=100, metadata=_OPERATIONAL)
    keep_checkpoints: int = field(default=2, metadata=_OPERATIONAL)
    device: str = field(default="auto", metadata=_OPERATIONAL)
    threads: int = field(default=0, metadata=_OPERATIONAL)
    """CPU threads for torch (0 = leave torch's default)."""
    compile: bool = field(default=False, metadata=_OPERATIONAL)
    """torch.compile the model (faster on GPU; numerics may differ in the last bits)."""
    parallel: str = field(default="auto", metadata=_OPERATIONAL)
    """Under torchrun: ddp | fsdp (FSDP2, sharded weights and optimizer state) | auto (FSDP
    only when replicated training state would fill more than half a device's memory)."""
    activation_checkpointing: bool = field(default=False, metadata=_OPERATIONAL)
    """Recompute activations in the backward pass: less memory, about one more forward."""

    def __post_init__(self) -> None:
        _positive(self, "steps", "batch_tokens", "grad_accumulation", "eval_batches")
        _positive(self, "checkpoint_every", "eval_every", "keep_checkpoints")
        if not self.lr > 0:
            raise ConfigError(f"recipe.lr = {self.lr} must be > 0")
        for name in ("min_lr_ratio", "warmup_frac", "val_fraction"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"recipe.{name} = {getattr(self, name)} must be in [0, 1]")
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"recipe.precision = {self.precision!r}{did_you_mean(self.precision, PRECISIONS)}"
            )
        if self.parallel not in PARALLEL:
            raise ConfigError(
                f"recipe.parallel = {self.parallel!r}{did_you_mean(self.parallel, PARALLEL)}"
            )

    def sequences_per_step(self, context_length: int) -> int:
        """Sequences per optimizer step for a model of this context length."""
        n = self.batch_tokens // context_length
        if n < self.grad_accumulation or n % self.grad_accumulation:
            raise ConfigError(
                f"recipe.batch_tokens = {self.batch_tokens} gives {n} sequences of "
                f"{context_length} tokens, which recipe.grad_accumulation = "
                f"{self.grad_accumulation} must divide; choose batch_tokens as a multiple of "
                f"{context_length * self.grad_accumulation}"
            )
        return n

    @property
    def warmup_steps(self) -> int:
        return max(1, round(self.warmup_frac * self.steps)) if self.warmup_frac > 0 else 0


PRECISIONS = ("auto", "bf16", "fp32")
PARALLEL = ("auto", "ddp", "fsdp")


# ---------------------------------------------------------------------------------------------
# hashing


def to_dict(cfg: Any) -> dict[str, Any]:
    """A plain, JSON-ready dict of a config (Mappings become dicts)."""
    return {f.name: _plain(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}


def recipe_hash(recipe: Recipe) -> str:
    """sha256 of the recipe's canonical JSON, operational fields left out.

    Canonical: sorted keys, no whitespace, floats by repr, so the hash is identical across
    machines and Python processes (no dependence on hash randomisation or dict order).
    """
    hashed = {
        f.name: _plain(getattr(recipe, f.name))
        for f in dataclasses.fields(recipe)
        if f.metadata.get("hashed", True)
    }
    hashed["corpus"] = corpus_identity(recipe.corpus)
    return hashlib.sha256(canonical_json(hashed).encode()).hexdigest()


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------
# loading and overrides


def build(cls: type, values: Mapping[str, Any], *, section: str) -> Any:
    """Construct `cls` from a mapping, checking every key and type; errors name `section.key`."""
    names = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, raw in values.items():
        if key not in names:
            raise ConfigError(f"unknown key {section}.{key}{did_you_mean(key, names)}")
        kwargs[key] = _coerce(raw, _field_type(cls, key), f"{section}.{key}")
    try:
        return cls(**kwargs)
    except TypeError as err:  # pragma: no cover - all keys were checked above
        raise ConfigError(f"{section}: {err}") from None


def load_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; a syntax error names the file and line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: malformed TOML: {err}") from None


def parse_override(text: str) -> tuple[list[str], Any]:
    """`model.d_model=128` → (["model", "d_model"], 128). The value is parsed as a TOML value
    when it can be, else kept as a string (so `--set recipe.corpus=data/x.txt` works)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like section.key=value")
    key, _, raw = text.partition("=")
    path = [part for part in key.strip().split(".") if part]
    if not path:
        raise ConfigError(f"override {text!r} has an empty key")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return path, value


def apply_overrides(
    tree: Mapping[str, Any], overrides: Sequence[str], *, sections: Sequence[str]
) -> dict[str, Any]:
    """Apply `--set` overrides to a nested config mapping; the top-level key must be a section."""
    result = {k: dict(v) if isinstance(v, Mapping) else v for k, v in tree.items()}
    for text in overrides:
        path, value = parse_override(text)
        if len(path) < 2 or path[0] not in sections:
            head = path[0] if path else ""
            raise ConfigError(
                f"override {text!r}: the key must start with a section "
                f"({', '.join(sections)}){did_you_mean(head, sections) if head else ''}"
            )
        node = result.setdefault(path[0], {})
        for part in path[1:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return result


def check_sections(tree: Mapping[str, Any], allowed: Sequence[str], *, where: str) -> None:
    for key in tree:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown section [{key}]{did_you_mean(key, allowed)}")


def _field_type(cls: type, name: str) -> Any:
    return typing.get_type_hints(cls)[name]


def _coerce(value: Any, hint: Any, key: str) -> Any:
    """Check `value` against a field's type hint; ints are accepted for floats."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0] if errors else f"{key}: bad value {value!r}")
    if origin is not None and issubclass(origin, Mapping):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key} = {value!r} must be a table")
        return dict(value)
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - every field uses one of the hints above
        return value
    raise ConfigError(f"{key} = {value!r} must be of type {hint.__name__}")


def _positive(cfg: Any, *names: str) -> None:
    for name in names:
        value = getattr(cfg, name)
        if value < 1:
            section = "model" if isinstance(cfg, ModelConfig) else "recipe"
            raise ConfigError(f"{section}.{name} = {value} must be >= 1")


TRAIN_SECTIONS = ("model", "recipe")


def load_config(
    path: str | Path | None = None,
    *,
    preset: str | None = None,
    overrides: Sequence[str] = (),
) -> tuple[ModelConfig, Recipe]:
    """Model and recipe from a TOML file (`[model]`, `[recipe]`) or a named preset, then the
    `--set section.key=value` overrides. With neither file nor preset: the `tiny` preset."""
    from archaudit.presets import preset as named_preset

    if path is not None and preset is not None:
        raise ConfigError("give either a config file or a preset, not both")
    tree = load_toml(path) if path is not None else named_preset(preset or "tiny")
    where = str(path) if path is not None else f"preset {preset or 'tiny'!r}"
    check_sections(tree, TRAIN_SECTIONS, where=where)
    tree = apply_overrides(tree, overrides, sections=TRAIN_SECTIONS)
    model = build(ModelConfig, tree.get("model", {}), section="model")
    recipe = build(Recipe, tree.get("recipe", {}), section="recipe")
    return model, recipe
