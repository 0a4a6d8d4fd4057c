"""The one training step: what `train` runs at every step and what `plan`'s probe times.

`build_training` turns a built model into the parts a step needs, as the recipe says:
activation checkpointing, data parallelism (DDP or FSDP2 under torchrun), `torch.compile` and
the AdamW optimizer. `train_step` is one step's forward and backward passes over its
micro-batches followed by gradient clipping. `apply_update` is the optimizer update.
`set_matmul_precision` is the one process-wide setting the step runs under (TF32 on CUDA).

The update is a separate call because it may be skipped: the trainer passes a device flag that
is set once a step's loss or gradient norm is NaN or Inf, and fused AdamW then leaves weights
and state untouched (as under GradScaler), so a diverged step is never applied and nothing waits
for the host to look at the loss.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn

from archaudit.config import Recipe
from archaudit.model import Transformer, count_parameters
from archaudit.train.distributed import (
    World,
    checkpoint_activations,
    choose_strategy,
    full_norm,
    gradient_sync,
    parallelize,
)
from archaudit.train.optim import lr_at, make_optimizer

Batch = tuple[torch.Tensor, torch.Tensor]
"""Input tokens and next-token targets, both (B, T) int64."""


@dataclass(frozen=True)
class TrainingParts:
    """What one training step works on, built once per run by `build_training`."""

    model: Transformer
    """The plain module: its parameters are clipped, saved and restored."""
    step_model: nn.Module
    """What the forward pass calls: `model` parallelised and compiled as the recipe says."""
    optimizer: torch.optim.Optimizer
    recipe: Recipe
    device: torch.device


@dataclass(frozen=True)
class StepOutput:
    loss: torch.Tensor
    """This rank's mean loss over the step's micro-batches (not yet averaged over ranks)."""
    grad_norm: torch.Tensor
    """The total gradient norm before clipping (over all ranks' shards)."""
    lr: float


def autocast(device: torch.device, recipe: Recipe) -> contextlib.AbstractContextManager:
    """bf16 autocast with fp32 master weights; `auto` means bf16 on CUDA, fp32 on CPU."""
    bf16 = recipe.precision == "bf16" or (recipe.precision == "auto" and device.type == "cuda")
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)


def set_matmul_precision(device: torch.device) -> None:
    """TF32 for fp32 matmuls on CUDA (env.json records it). Process-wide, so the trainer and
    the probe both set it before building the step."""
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")


def build_training(
    model: Transformer, recipe: Recipe, device: torch.device, world: World
) -> TrainingParts:
    """Checkpoint activations, parallelise and compile `model` as the recipe says, then make
    its optimizer. FSDP2 replaces parameters in place, so sharding comes before the optimizer
    is given them."""
    if recipe.activation_checkpointing:
        checkpoint_activations(model)
    strategy = choose_strategy(recipe.parallel, count_parameters(model), device, world)
    step_model = parallelize(model, strategy, device)
    if recipe.compile:  # an OptimizedModule, which mypy sees as a plain callable
        step_model = cast(nn.Module, torch.compile(step_model))
    return TrainingParts(model, step_model, make_optimizer(model, recipe), recipe, device)


def train_step(parts: TrainingParts, step: int, batches: Iterable[Batch]) -> StepOutput:
    """Set step `step`'s learning rate, run forward and backward over its micro-batches (one
    per `recipe.grad_accumulation`) and clip the gradients. The gradients are synced across
    ranks only on the last micro-batch."""
    recipe, device = parts.recipe, parts.device
    lr = lr_at(step, recipe)
    for group in parts.optimizer.param_groups:
        group["lr"] = lr
    loss_sum = torch.zeros((), device=device)
    for m, (x, y) in enumerate(batches):
        with gradient_sync(parts.step_model, sync=m == recipe.grad_accumulation - 1):
            with autocast(device, recipe):
                loss = parts.step_model(x.to(device), targets=y.to(device))
            (loss / recipe.grad_accumulation).backward()
        loss_sum += loss.detach()
    norm = nn.utils.clip_grad_norm_(parts.model.parameters(), recipe.grad_clip)
    return StepOutput(loss_sum / recipe.grad_accumulation, full_norm(norm), lr)


def apply_update(parts: TrainingParts, skip: torch.Tensor | None = None) -> None:
    """The optimizer update of the clipped gradients, skipped on the device where `skip` (a
    float32 scalar) is 1: fused AdamW's `found_inf`, which GradScaler sets the same way."""
    optimizer = parts.optimizer
    if skip is not None:
        optimizer.found_inf, optimizer.grad_scale = skip, None  # type: ignore[attr-defined]
    try:
        optimizer.step()
    finally:
        if skip is not None:
            del optimizer.found_inf, optimizer.grad_scale  # type: ignore[attr-defined]
    optimizer.zero_grad(set_to_none=True)


def nonfinite(loss: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
    """1.0 where the step's loss or gradient norm is NaN or Inf, else 0.0 (on the device)."""
    return (~(torch.isfinite(loss) & torch.isfinite(grad_norm))).float()


class StepClock:
    """Steps' durations without waiting for the device: CUDA events on a GPU, read at the log
    cadence; the host clock elsewhere (a CPU step is done when its calls return)."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"

    def mark(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def seconds(self, start: Any, end: Any) -> float:
        if not self.cuda:
            return end - start
        end.synchronize()
        return start.elapsed_time(end) / 1000
