"""Attention focus: analytic statistics of a uniform causal map, and maps read from the models
that reproduce their own attention output."""

from __future__ import annotations

import math

import pytest
import torch
from diagnose_helpers import tiny_hf_view, tiny_view

from archaudit.diagnose.attention import attention_focus, distance_edges, map_statistics

T = 8


def _uniform_causal(T: int) -> torch.Tensor:
    causal = torch.tril(torch.ones(T, T))
    return (causal / causal.sum(-1, keepdim=True))[None, None]  # (1, 1, T, T)


def test_uniform_map_statistics_are_analytic() -> None:
    maps = _uniform_causal(T)
    edges = distance_edges(T)
    assert edges == [0, 1, 2, 4, 8]
    t = torch.arange(T)
    distance = (t[:, None] - t[None, :]).clamp_min(0)
    buckets = torch.bucketize(distance, torch.tensor(edges), right=True) - 1
    sink, entropy, mass = map_statistics(maps, 1, buckets, len(edges) - 1)
    # Query t spreads 1/(t+1) over t+1 keys: sink share 1/(t+1), entropy log(t+1).
    assert float(sink[0]) == pytest.approx(sum(1 / (q + 1) for q in range(1, T)))
    assert float(entropy[0]) == pytest.approx(sum(math.log(q + 1) for q in range(1, T)))
    # Distance 0 gets 1/(t+1) from every query; distances 4..7 only from queries t >= 4.
    assert float(mass[0, 0]) == pytest.approx(sum(1 / (q + 1) for q in range(T)))
    assert float(mass[0, 3]) == pytest.approx(sum((q - 3) / (q + 1) for q in range(4, T)))
    assert float(mass.sum()) == pytest.approx(T)  # every query's weights sum to one


@pytest.mark.parametrize("make_view", [tiny_view, tiny_hf_view])
def test_maps_reproduce_the_attention_output(make_view) -> None:
    view = make_view()
    ids = torch.randint(256, (2, 12), generator=torch.Generator().manual_seed(0))
    maps = view.attention_maps(ids)
    assert len(maps) == len(view.layers())
    for m in maps:
        assert torch.allclose(m.sum(-1), torch.ones(m.shape[:-1]), atol=1e-5)
        assert float(torch.triu(m, diagonal=1).abs().max()) == 0.0  # causal


def test_archaudit_maps_equal_an_explicit_softmax() -> None:
    view = tiny_view(n_layers=1)
    ids = torch.randint(256, (1, 10), generator=torch.Generator().manual_seed(1))
    attention = view.layers()[0].attn
    captured = {}
    hook = attention.score.register_forward_pre_hook(lambda _m, a: captured.update(q=a[0], k=a[1]))
    maps = view.attention_maps(ids)
    hook.remove()
    q, k = captured["q"], captured["k"]
    z = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    z = z.masked_fill(torch.triu(torch.ones(10, 10, dtype=torch.bool), 1), float("-inf"))
    assert torch.allclose(maps[0], torch.softmax(z, -1), atol=1e-6)


def test_attention_focus_shapes_and_means() -> None:
    view = tiny_view(n_layers=2)
    rows = torch.randint(256, (3, 17), generator=torch.Generator().manual_seed(2))
    result = attention_focus(view, rows, sink_tokens=2, batch_size=2)
    assert (result.tokens, result.window, result.sink_tokens) == (48, 16, 2)
    assert len(result.sink_mass) == 2 and len(result.sink_mass[0]) == 2
    assert result.distance_buckets == ["0", "1", "2-3", "4-7", "8-15"]
    for layer in result.distance_mass:
        for head in layer:
            assert sum(head) == pytest.approx(1.0, abs=1e-5)
    assert result.sink_mass_mean == pytest.approx(sum(map(sum, result.sink_mass)) / 4)
