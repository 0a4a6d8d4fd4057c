"""Recovery fine-tuning: full fine-tuning lowers the loss; LoRA touches only the attention
projections and leaves a plain model behind."""

from __future__ import annotations

import pytest
import torch
from diagnose_helpers import tiny_view

from archaudit.diagnose.heads import mean_loss
from archaudit.diagnose.reasoning import reasoning_corpus
from archaudit.diagnose.recover import recover

ROWS = torch.tensor(list(reasoning_corpus(2000, seed=0).encode()[: 16 * 33])).view(16, 33)


def test_full_fine_tuning_lowers_the_loss() -> None:
    view = tiny_view(n_layers=2)
    before = mean_loss(view, ROWS)
    done = recover(view, ROWS, steps=30, lr=1e-2, batch_size=8)
    assert done.mode == "full" and done.steps == 30
    assert mean_loss(view, ROWS) < before - 0.5
    assert not view.model.training


def test_lora_changes_only_attention_projections() -> None:
    pytest.importorskip("peft")
    view = tiny_view(n_layers=2)
    before = {k: v.clone() for k, v in view.model.state_dict().items()}
    done = recover(view, ROWS, steps=5, lr=1e-2, batch_size=4, lora_rank=2)
    after = view.model.state_dict()
    assert done.mode == "lora" and set(after) == set(before)  # merged: no LoRA tensors left
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(
        k.split(".")[-2] in ("q_proj", "k_proj", "v_proj", "o_proj") for k in changed
    )
