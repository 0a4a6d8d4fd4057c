"""`Recipe`: the shared training recipe, identical for every arm of an audit.

`archaudit.data.identity.recipe_hash` hashes it (with the corpus's content), so that an audit
can refuse arms trained under another recipe (protocol R1). The hash lives there because a
prepared corpus is identified by its index, which only the data package reads.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from archaudit.config.tables import positive
from archaudit.errors import ConfigError, did_you_mean

_OPERATIONAL = {"hashed": False}  # metadata: does not change what is trained


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """The shared training recipe (R1): identical for every arm of an audit, and hashed.

    Fields marked operational (logging, checkpoint cadence, device) do not enter the hash.
    """

    SECTION: ClassVar[str] = "recipe"

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
    corpus_root: str = field(default="", metadata=_OPERATIONAL)
    """The folder a relative `corpus` is read from ("" = the current directory): an audit sets
    its file's folder. Not hashed, so the recipe hash is the same wherever it is planned."""
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
    match_params: str | None = field(default=None, metadata=_OPERATIONAL)
    """total | active: the plan notes (and `--strict` refuses) every arm whose total or active
    parameters (MoE: k of E experts; shared blocks once per use) differ from its baseline's by
    more than `match_tolerance`. None: not matched; the plan shows both counts."""
    match_tolerance: float = field(default=0.05, metadata=_OPERATIONAL)
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
        if not 0.0 <= self.val_fraction < 1.0:  # 1 would leave no training tokens
            raise ConfigError(
                f"recipe.val_fraction = {self.val_fraction} must be in [0, 1): the training "
                "split needs tokens"
            )
        if self.threads < 0:
            raise ConfigError(f"recipe.threads = {self.threads} must be >= 0 (0 = torch's default)")
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
DEVICE = re.compile(r"auto|cpu|mps|(cuda|xpu)(:\d{1,3})?")
"""The devices a run can name; whether this machine has one is checked when it trains (and by
`plan` for the local executor)."""
PARALLEL = ("auto", "ddp", "fsdp")
MATCH_PARAMS = ("total", "active")
