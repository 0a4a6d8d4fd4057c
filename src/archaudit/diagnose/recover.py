"""Light recovery fine-tuning of a pruned model, the one training diagnose does: does a short
fine-tune restore what pruning broke? (When Fewer Layers Break More Chains finds it does not
restore test-time scaling.) Full fine-tuning, or LoRA (Hu et al. 2021) through `peft`."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from archaudit.diagnose.access import ModelView
from archaudit.errors import ConfigError
from archaudit.progress import progress
from archaudit.stats.records.serialize import JsonResult

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
"""Attention projections: the names archaudit and Llama-style HF models share."""


@dataclass(frozen=True)
class Recovery(JsonResult):
    mode: str
    """"full" or "lora"."""
    steps: int
    lr: float
    first_loss: float
    last_loss: float


def _lora(model: nn.Module, rank: int) -> Any:
    """`model` wrapped in LoRA adapters: a peft model (an optional extra, so typed Any here)."""
    if importlib.util.find_spec("peft") is None:
        raise ConfigError("--lora needs `peft`: pip install 'archaudit[lora]', or drop --lora")
    import peft

    config = peft.LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=list(LORA_TARGETS))
    return peft.get_peft_model(model, config)


def recover(
    view: ModelView,
    rows: torch.Tensor,
    *,
    steps: int = 100,
    lr: float = 1e-3,
    batch_size: int = 8,
    lora_rank: int | None = None,
    seed: int = 0,
) -> Recovery:
    """Fine-tune `view`'s model in place on next-token loss over `rows` (n, T + 1)."""
    model = view.model
    lora = _lora(model, lora_rank) if lora_rank else None
    params = [p for p in (lora or model).parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    order = torch.Generator().manual_seed(seed)
    losses = []
    model.train()
    with progress(
        "recovery", steps, stats="loss {task.fields[loss]:.3f}", loss=float("nan")
    ) as bar:
        for _ in range(steps):
            pick = torch.randint(rows.shape[0], (batch_size,), generator=order)
            batch = rows[pick].to(view.device)
            logits = view.logits(batch[:, :-1])
            loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            bar.update(advance=1, loss=losses[-1])
    if lora is not None:
        lora.merge_and_unload()  # the LoRA deltas folded into the base weights, in place
    model.eval()
    return Recovery("lora" if lora_rank else "full", steps, lr, losses[0], losses[-1])
