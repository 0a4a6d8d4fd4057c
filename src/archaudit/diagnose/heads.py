"""Head importance: the held-out loss increase when one attention head's output is zeroed
(Michel et al. 2019, "Are Sixteen Heads Really Better than One?"), per layer and head. Layers
whose heads all cost little are the ones that tolerate pruning."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from archaudit.diagnose.access import ModelView
from archaudit.progress import progress
from archaudit.stats.records.serialize import JsonResult


def mean_loss(view: ModelView, rows: torch.Tensor, *, batch_size: int = 8) -> float:
    """Mean next-token cross-entropy (nats/token) of `rows` (n, T + 1)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, rows.shape[0], batch_size):
            batch = rows[start : start + batch_size].to(view.device)
            logits = view.logits(batch[:, :-1])
            targets = batch[:, 1:]
            total += float(
                F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
            )
            count += targets.numel()
    return total / count


@dataclass(frozen=True)
class HeadsResult(JsonResult):
    model: str
    tokens: int
    base_loss: float
    loss_increase: list[list[float]]
    """[layer][head]: loss with that head zeroed minus the base loss (nats/token)."""
    layer_increase: list[float]
    """Per layer, the mean over its heads."""


def head_importance(view: ModelView, rows: torch.Tensor, *, batch_size: int = 8) -> HeadsResult:
    base = mean_loss(view, rows, batch_size=batch_size)
    heads = view.n_heads()
    increase: list[list[float]] = []
    with progress("heads", sum(heads)) as bar:
        for layer, n in enumerate(heads):
            row = []
            for head in range(n):
                with view.heads_masked({layer: [head]}):
                    row.append(mean_loss(view, rows, batch_size=batch_size) - base)
                bar.update(advance=1)
            increase.append(row)
    return HeadsResult(
        model=view.name,
        tokens=rows.shape[0] * (rows.shape[1] - 1),
        base_loss=base,
        loss_increase=increase,
        layer_increase=[sum(r) / len(r) for r in increase],
    )
