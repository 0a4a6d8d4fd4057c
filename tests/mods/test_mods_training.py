"""Every modification trains: forward and backward on CPU with finite gradients everywhere,
and a 30-step run on a fixed batch of structured tokens whose loss falls."""

from __future__ import annotations

import math

import pytest
import torch

from archaudit.config import ModelConfig, Recipe
from archaudit.model import build_model
from archaudit.mods import list_modifications, resolve_arm

TINY = ModelConfig(vocab_size=64, context_length=16, d_model=64, n_layers=2, n_heads=4)
NAMES = [mod.name for mod in list_modifications()]


@pytest.fixture(autouse=True)
def one_thread():
    # Tiny models on a shared machine: one thread avoids oversubscription stalls.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def structured_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Arithmetic progressions mod V with a random start and step per row."""
    g = torch.Generator().manual_seed(0)
    start = torch.randint(0, 64, (8, 1), generator=g)
    step = torch.randint(1, 5, (8, 1), generator=g)
    seq = (start + step * torch.arange(TINY.context_length + 1)) % 64
    return seq[:, :-1], seq[:, 1:]


def model_for(name: str):
    arm = resolve_arm(name)
    torch.manual_seed(0)
    return build_model(arm.apply(TINY)), arm.apply_recipe(Recipe(steps=30, lr=3e-3))


@pytest.mark.parametrize("name", NAMES)
def test_forward_backward_gives_finite_gradients_to_every_parameter(name):
    model, _ = model_for(name)
    idx, targets = structured_batch()
    loss = model.loss(idx, targets)
    loss.backward()
    assert torch.isfinite(loss)
    for pname, p in model.named_parameters():
        assert p.grad is not None, f"{pname} gets no gradient"
        assert torch.isfinite(p.grad).all(), f"{pname} has a non-finite gradient"


@pytest.mark.parametrize("name", NAMES)
def test_thirty_steps_reduce_the_loss(name):
    model, recipe = model_for(name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.lr)
    idx, targets = structured_batch()
    losses = []
    for step in range(recipe.steps):  # the arm's warmup, then constant: enough for 30 steps
        warm = (step + 1) / recipe.warmup_steps if recipe.warmup_steps else 1.0
        for group in optimizer.param_groups:
            group["lr"] = recipe.lr * min(1.0, warm)
        loss = model.loss(idx, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < 0.7 * losses[0], losses
