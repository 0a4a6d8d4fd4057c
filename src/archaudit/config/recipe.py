"""`Recipe`: the shared training recipe, identical for every arm of an audit.

`archaudit.data.identity.recipe_hash` hashes it (with the corpus's content), so that an audit
can refuse arms trained under another recipe (protocol R1). The hash lives there because a
prepared corpus is identified by its index, which only the data package reads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from archaudit.config.tables import positive
from archaudit.errors import ConfigError, did_you_mean
from archaudit.ranges import Range

_OPERATIONAL = {"hashed": False}  # metadata: does not change what is trained
AT_LEAST_ONE = Range(1)
"""A count the command line checks where it is parsed (`--recipe.steps 0` is one line)."""


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """The shared training recipe (R1): identical for every arm of an audit, and hashed.

    Fields marked operational (logging, checkpoint cadence, device) do not enter the hash.
    """

    SECTION: ClassVar[str] = "recipe"
    KNOWN_AS: ClassVar[Mapping[str, str]] = {
        "learning_rate": "lr",
        "max_lr": "lr",
        "peak_lr": "lr",
        "max_steps": "steps",
        "train_steps": "steps",
        "num_steps": "steps",
        "training_steps": "steps",
        "warmup_ratio": "warmup_frac",
        "warmup_steps": "warmup_frac: a share of the steps",
        "warmup": "warmup_frac",
        "min_lr": "min_lr_ratio: a share of lr",
        "eps": "adam_eps",
        "adam_epsilon": "adam_eps",
        "adam_beta1": "beta1",
        "adam_beta2": "beta2",
        "max_grad_norm": "grad_clip",
        "clip_grad_norm": "grad_clip",
        "gradient_clipping": "grad_clip",
        "gradient_accumulation_steps": "grad_accumulation",
        "batch_size": "batch_tokens: tokens per step, not sequences",
        "global_batch_size": "batch_tokens: tokens per step, not sequences",
        "dtype": "precision",
        "mixed_precision": "precision",
        "seed": "data_seed: the run's seed is `train --seed` or the audit's seeds",
        "val_split": "val_fraction",
        "validation_split": "val_fraction",
        "dataset": "corpus",
        "data": "corpus",
    }
    """Other trainers' names (Hugging Face, nanoGPT, torchtitan) → this recipe's, for the
    did-you-mean of an unknown key: `learning_rate` is not a misspelling difflib can see."""

    steps: int = field(default=300, metadata={"range": AT_LEAST_ONE})
    """Optimizer steps (an audit's scale sets them from its token budget)."""
    batch_tokens: int = field(default=4096, metadata={"range": AT_LEAST_ONE})
    """Tokens per optimizer step, summed over gradient accumulation and data-parallel ranks.
    Counted in tokens so that a shorter context (more, shorter sequences) keeps the recipe."""
    grad_accumulation: int = field(default=1, metadata={"range": AT_LEAST_ONE})
    """Micro-steps per optimizer step (the batch is split evenly among them)."""
    lr: float = 3e-3
    """Peak learning rate (AdamW), reached after the warmup."""
    min_lr_ratio: float = 0.1
    """Cosine decay ends at lr · min_lr_ratio."""
    warmup_frac: float = 0.05
    """Share of the steps spent warming the rate up linearly from 0 (0 = no warmup)."""
    weight_decay: float = 0.1
    """AdamW weight decay of the decayed parameters (projections, embeddings)."""
    beta1: float = 0.9
    """AdamW β₁."""
    beta2: float = 0.95
    """AdamW β₂."""
    adam_eps: float = 1e-8
    """AdamW ε."""
    grad_clip: float = 1.0
    """Gradients are clipped to this global norm."""
    precision: str = "auto"
    """auto (bf16 autocast on CUDA, fp32 on CPU) | bf16 | fp32. Master weights stay fp32."""
    tokenizer: str = "byte"
    """byte | bpe:<vocab_size> | gpt2:<dir with vocab.json and merges.txt> | hf:<dir>."""
    corpus: str = "synthetic"
    """synthetic (the embedded default language) or a path to a .txt / .jsonl file."""
    corpus_root: str = field(default="", metadata=_OPERATIONAL)
    """The folder a relative `corpus` is read from ("" = the current directory): an audit sets
    its file's folder. Not hashed, so the recipe hash is the same wherever it is planned."""
    corpus_chars: int = field(default=2_000_000, metadata={"range": AT_LEAST_ONE})
    """Characters of synthetic corpus to generate (ignored for file corpora)."""
    val_fraction: float = 0.05
    """Share of the corpus held out for validation, in (0, 1)."""
    data_seed: int = field(default=1234, metadata={"range": Range(0)})
    """Seeds the corpus split (and the synthetic corpus) and, unless `vary_data_order`, the
    batch order."""
    vary_data_order: bool = False
    """False (default): every seed sees the same batches and only init changes; True: the run
    seed also shuffles the data order."""
    eval_every: int = field(default=100, metadata=_OPERATIONAL | {"range": AT_LEAST_ONE})
    """Validate every this many steps (and at the last)."""
    eval_batches: int = field(default=4, metadata=_OPERATIONAL | {"range": AT_LEAST_ONE})
    """Batches of held-out text per validation."""
    checkpoint_every: int = field(default=100, metadata=_OPERATIONAL | {"range": AT_LEAST_ONE})
    """Save a checkpoint every this many steps (and at the last)."""
    keep_checkpoints: int = field(default=2, metadata=_OPERATIONAL | {"range": AT_LEAST_ONE})
    """Checkpoints kept on disk (the newest)."""
    device: str = field(default="auto", metadata=_OPERATIONAL)
    """auto (CUDA when there is one, else CPU) | cpu | cuda | cuda:N | mps."""
    threads: int = field(default=0, metadata=_OPERATIONAL | {"range": Range(0)})
    """CPU threads for torch (0 = leave torch's default)."""
    compile: bool = field(default=False, metadata=_OPERATIONAL)
    """torch.compile the model (faster on GPU; numerics may differ in the last bits)."""
    parallel: str = field(default="auto", metadata=_OPERATIONAL)
    """Under torchrun: ddp | fsdp (FSDP2, sharded weights and optimizer state) | auto (FSDP
    only when replicated training state would fill more than half a device's memory)."""
    activation_checkpointing: bool = field(default=False, metadata=_OPERATIONAL)
    """Recompute activations in the backward pass: less memory, about one more forward."""
    match_params: str | None = field(default=None, metadata=_OPERATIONAL)
    """total | active: the plan notes (and `--strict` refuses) every arm whose total or active
    parameters (MoE: k of E experts; shared blocks once per use) differ from its baseline's by
    more than `match_tolerance`. None: not matched; the plan shows both counts."""
    match_tolerance: float = field(default=0.05, metadata=_OPERATIONAL)
    """The relative parameter difference `match_params` allows (0.05 = ±5%)."""
    log_signals: bool = field(default=True, metadata=_OPERATIONAL)
    """Log the instability signals (attention logits, log Z, sublayer RMS, gradient-norm trend)
    at every validation (docs/stability.md); they ride on the validation's forward passes."""

    def __post_init__(self) -> None:
        positive(self, "steps", "batch_tokens", "grad_accumulation", "eval_batches")
        positive(self, "checkpoint_every", "eval_every", "keep_checkpoints")
        for name in ("lr", "adam_eps", "grad_clip"):
            if not 0 < getattr(self, name) < math.inf:
                raise ConfigError(f"recipe.{name} = {getattr(self, name)} must be > 0 and finite")
        if not 0 <= self.weight_decay < math.inf:
            raise ConfigError(f"recipe.weight_decay = {self.weight_decay} must be >= 0 and finite")
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"recipe.{name} = {getattr(self, name)} must be in [0, 1)")
        if not DEVICE.fullmatch(self.device):
            raise ConfigError(
                f"recipe.device = {self.device!r} is not a device: auto, cpu, cuda, cuda:N, mps"
            )
        for name in ("min_lr_ratio", "warmup_frac"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"recipe.{name} = {getattr(self, name)} must be in [0, 1]")
        if not 0.0 < self.val_fraction < 1.0:  # both splits need text: training and held-out
            raise ConfigError(f"recipe.val_fraction = {self.val_fraction} must be in (0, 1)")
        if not 0 <= self.threads <= MAX_THREADS:
            raise ConfigError(
                f"recipe.threads = {self.threads} must be 0 (torch's default) to {MAX_THREADS}"
            )
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"recipe.precision = {self.precision!r}{did_you_mean(self.precision, PRECISIONS)}"
            )
        if self.match_params not in (None, *MATCH_PARAMS):
            raise ConfigError(
                f"recipe.match_params = {self.match_params!r}; allowed: {MATCH_PARAMS}"
                f"{did_you_mean(self.match_params, MATCH_PARAMS)}"
            )
        if not self.match_tolerance >= 0:
            raise ConfigError(f"recipe.match_tolerance = {self.match_tolerance} must be >= 0")
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
    def corpus_path(self) -> str:
        """Where the corpus is opened: `corpus` under `corpus_root` when it is relative."""
        if self.corpus == "synthetic" or not self.corpus_root:
            return self.corpus
        return str(Path(self.corpus_root) / self.corpus)

    @property
    def warmup_steps(self) -> int:
        return max(1, round(self.warmup_frac * self.steps)) if self.warmup_frac > 0 else 0


PRECISIONS = ("auto", "bf16", "fp32")
MAX_THREADS = 4096
DEVICE = re.compile(r"auto|cpu|mps|(cuda|xpu)(:\d{1,3})?")
"""The devices a run can name; whether this machine has one is checked when it trains (and by
`plan` for the local executor)."""
PARALLEL = ("auto", "ddp", "fsdp")
MATCH_PARAMS = ("total", "active")
