"""Validation at the evaluation cadence: the held-out loss in the row's `val_loss`."""

from __future__ import annotations

import torch
from torch import nn

from archaudit.config import Recipe
from archaudit.data.sampler import BatchSampler
from archaudit.metrics import PRIMARY_LOSS
from archaudit.train.callbacks import Callback, Row, Trainer
from archaudit.train.step import autocast


@torch.no_grad()
def validation_loss(
    model: nn.Module, sampler: BatchSampler, recipe: Recipe, device: torch.device, n_seq: int
) -> float:
    """Mean next-token cross-entropy (nats/token) over fixed held-out batches."""
    model.eval()
    total = torch.zeros((), device=device)
    for i in range(recipe.eval_batches):
        x, y = sampler.batch((i,), n_seq)
        with autocast(device, recipe):
            logits = model(x.to(device))
        total += nn.functional.cross_entropy(logits.float().flatten(0, 1), y.to(device).flatten())
    model.train()
    return float(total) / recipe.eval_batches


class Validation(Callback):
    def at_eval(self, trainer: Trainer, row: Row) -> None:
        run = trainer.run
        row[PRIMARY_LOSS] = validation_loss(
            trainer.model, trainer.val_data, run.recipe, run.device, trainer.micro
        )
