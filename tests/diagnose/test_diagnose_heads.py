"""Head masking: a head whose output projection is zero costs nothing; the others cost loss."""

from __future__ import annotations

import pytest
import torch
from diagnose_helpers import tiny_hf_view, tiny_view

from archaudit.diagnose.heads import head_importance, mean_loss

ROWS = torch.randint(256, (3, 17), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("make_view", [tiny_view, tiny_hf_view])
def test_dead_head_costs_nothing(make_view) -> None:
    view = make_view()
    proj, n_heads = view.attention_output(view.layers()[1])
    width = proj.in_features // n_heads
    with torch.no_grad():
        proj.weight[:, width : 2 * width] = 0.0  # head 1 of layer 1 writes nothing
    result = head_importance(view, ROWS)
    assert len(result.loss_increase) == len(view.layers())
    assert result.loss_increase[1][1] == pytest.approx(0.0, abs=1e-6)
    others = [
        abs(x)
        for l, row in enumerate(result.loss_increase)
        for h, x in enumerate(row)
        if (l, h) != (1, 1)
    ]
    assert min(others) > 1e-6
    assert result.base_loss == pytest.approx(mean_loss(view, ROWS))


def test_masking_is_undone_on_exit() -> None:
    view = tiny_view(n_layers=2)
    base = mean_loss(view, ROWS)
    with view.heads_masked({0: [0, 1], 1: [0]}):
        assert mean_loss(view, ROWS) != pytest.approx(base)
    assert mean_loss(view, ROWS) == pytest.approx(base)
