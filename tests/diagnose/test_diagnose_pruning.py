"""Layer scores and pruning: an identity layer scores lowest and is removed first; removal and
LaCo merging build the right stacks on archaudit and Hugging Face models."""

from __future__ import annotations

import math

import pytest
import torch
from diagnose_helpers import make_identity, tiny_hf_view, tiny_view

from archaudit.diagnose.pruning import (
    PRUNE_METHODS,
    LayerScores,
    choose_layers,
    layer_scores,
    merge_layers,
    pruned_view,
)
from archaudit.errors import ConfigError

ROWS = torch.randint(256, (4, 25), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("make_view", [tiny_view, tiny_hf_view])
def test_identity_layer_ranks_first_and_removing_it_changes_nothing(make_view) -> None:
    view = make_view()
    identity = 1
    make_identity(view.layers()[identity])
    scores = layer_scores(view, ROWS, batch_size=3)
    assert scores.block_influence[identity] == pytest.approx(0.0, abs=1e-6)
    others = [b for i, b in enumerate(scores.block_influence) if i != identity]
    assert min(others) > 1e-3
    plan = choose_layers("block-influence", scores, 1)
    assert plan.removed == (identity,)
    pruned = pruned_view(view, plan)
    assert len(pruned.layers()) == len(view.layers()) - 1
    with torch.no_grad():
        assert torch.allclose(pruned.logits(ROWS), view.logits(ROWS), atol=1e-5)
    assert len(view.layers()) == len(pruned.layers()) + 1  # the original is untouched


def test_angular_distance_of_runs() -> None:
    view = tiny_view(n_layers=4)
    make_identity(view.layers()[2])
    scores = layer_scores(view, ROWS)
    L = 4
    for l in range(L):
        assert scores.angular_distance[l][l] == pytest.approx(_angular(view, l, l), abs=1e-4)
        for m in range(l):
            assert math.isnan(scores.angular_distance[l][m])
    assert scores.run_distance(1)[2] == pytest.approx(0.0, abs=1e-4)
    assert choose_layers("angular", scores, 1).removed == (2,)


def _angular(view, first: int, last: int) -> float:
    io = view.layer_io(ROWS[:, :-1])
    cos = torch.nn.functional.cosine_similarity(io[first][0], io[last][1], dim=-1)
    return float((torch.arccos(cos.clamp(-1, 1)) / math.pi).mean())


def _scores(bi: list[float], angular: list[list[float]]) -> LayerScores:
    return LayerScores(bi, angular)


def test_methods_choose_the_documented_layers() -> None:
    nan = math.nan
    angular = [
        [0.5, 0.6, 0.7, 0.8, 0.9],
        [nan, 0.3, 0.2, 0.5, 0.6],
        [nan, nan, 0.4, 0.1, 0.5],
        [nan, nan, nan, 0.2, 0.4],
        [nan, nan, nan, nan, 0.3],
    ]
    scores = _scores([0.5, 0.3, 0.4, 0.2, 0.6], angular)
    assert choose_layers("block-influence", scores, 2).removed == (1, 3)
    assert choose_layers("angular", scores, 2).removed == (2, 3)  # d(2, 2) = 0.1 is least
    assert choose_layers("tail", scores, 2).removed == (2, 3)  # the last layer (4) stays
    laco = choose_layers("laco", scores, 1)  # runs of 2 layers: d(2,2)=0.1 least, at l=2
    assert (laco.merged_into, laco.removed) == (2, (3,))
    assert set(PRUNE_METHODS) == {"angular", "block-influence", "laco", "tail"}
    with pytest.raises(ConfigError, match="between 1 and 4"):
        choose_layers("tail", scores, 5)
    with pytest.raises(ConfigError, match="did you mean 'angular'"):
        choose_layers("angualr", scores, 1)


def test_laco_merge_keeps_the_differences() -> None:
    view = tiny_view(n_layers=4)
    layers = view.layers()[1:4]
    merged = merge_layers(layers)
    for name, param in merged.named_parameters():
        parts = [dict(layer.named_parameters())[name] for layer in layers]
        expected = parts[0] + (parts[1] - parts[0]) + (parts[2] - parts[0])
        assert torch.allclose(param, expected)
    plan = choose_layers("laco", layer_scores(view, ROWS), 2)
    assert len(pruned_view(view, plan).layers()) == 2


def test_hf_pruned_copy_renumbers_its_layers() -> None:
    view = tiny_hf_view()
    pruned = view.rebuilt([1])
    assert pruned.model.config.num_hidden_layers == 1
    assert pruned.layers()[0].self_attn.layer_idx == 0
    assert view.layers()[1].self_attn.layer_idx == 1
