"""Helpers for the diagnostics tests: tiny models, an identity layer, a tiny reasoning model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from archaudit.config import ModelConfig, Recipe, build
from archaudit.data.tokenizers import ByteTokenizer
from archaudit.diagnose import view_of
from archaudit.diagnose.access import ModelView
from archaudit.model import build_model

SHARED_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def tiny_view(seed: int = 0, n_layers: int = 4, **changes: Any) -> ModelView:
    """A randomly initialised archaudit Transformer over bytes."""
    torch.manual_seed(seed)
    shape = dict(d_model=32, n_layers=n_layers, n_heads=2, context_length=64)
    cfg = build(ModelConfig, {**shape, **changes}, section="model")  # changes: slot tables
    return view_of((build_model(cfg), ByteTokenizer()))


def tiny_hf_view(seed: int = 0) -> ModelView:
    """A randomly initialised two-layer Llama (tests/evals' helper) as a view."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "evals"))
    from eval_helpers import tiny_hf_lm

    return view_of(tiny_hf_lm(seed))


@torch.no_grad()
def make_identity(layer: nn.Module) -> None:
    """Zero every residual output projection of a layer: it then passes its input through."""
    for name in ("o_proj", "w2", "down_proj"):  # attention and MLP outputs (ours, Llama's)
        for module in layer.modules():
            if hasattr(module, name):
                getattr(module, name).weight.zero_()


REASONING = ModelConfig(d_model=64, n_layers=4, n_heads=4, context_length=32)


def train_reasoning_model(out: Path, corpus: Path, steps: int = 300) -> Path:
    """A tiny byte-level model trained by the project's trainer on the reasoning corpus."""
    from archaudit.train import train

    recipe = Recipe(
        steps=steps,
        batch_tokens=2048,
        lr=3e-3,
        corpus=str(corpus),
        device="cpu",
        eval_every=steps,
        checkpoint_every=steps,
        warmup_frac=0.05,
        threads=1,
    )
    result = train(REASONING, recipe, out, seed=0)
    assert result.status == "ok"
    return out


class FakeSolver(ModelView):
    """A byte-level 'model' that continues each line's true reasoning completion with
    probability `skill` per character (the rest spread over the ten digits), and guesses a
    uniform digit once off track, e.g. after an answer marker forced onto an unfinished
    scratchpad. Its test-time scaling curves are known in shape."""

    def __init__(self, skill: float) -> None:
        self.skill = skill
        self.name, self.device = "fake-solver", torch.device("cpu")

    @property
    def context_length(self) -> int:
        return 1024

    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def decode(self, ids) -> str:  # type: ignore[no-untyped-def]
        return bytes(ids).decode(errors="replace")

    def _logits(self, ids: torch.Tensor) -> torch.Tensor:
        out = torch.full((*ids.shape, 256), -1e4)
        for b, row in enumerate(ids.tolist()):
            out[b, -1] = self._next(self.decode(row).rsplit("\n", 1)[-1])
        return out

    def _next(self, line: str) -> torch.Tensor:
        prompt, colon, done = line.partition(":")
        probs = torch.zeros(256)
        if not colon:  # a finished row still being extended with the others
            probs[ord("\n")] = 1.0
            return probs.clamp_min(1e-12).log()
        values = [int(v) for v in prompt.split("+")]
        sums = [sum(values[: i + 1]) % 10 for i in range(1, len(values))]
        truth = ",".join(map(str, sums)) + f"={sums[-1]}\n"
        digits = [ord(str(d)) for d in range(10)]
        if truth.startswith(done):
            probs[digits] = (1 - self.skill) / 10
            probs[ord(truth[len(done)])] += self.skill
        elif done[-1:].isdigit() and "=" in done:
            probs[ord("\n")] = 1.0
        else:
            probs[digits] = 0.1
        return probs.clamp_min(1e-12).log()
