"""Formula tests for the position family: ALiBi slopes and biases, RoPE's rotation and its
relative-position property (full, partial, base 500k), NoPE, sinusoidal and learned tables."""

from __future__ import annotations

import math

import pytest
import torch
from test_mods_support import build_arm, formula

TINY = dict(vocab_size=64, context_length=16, d_model=64, n_layers=2, n_heads=4)  # d_h = 16
T = 12


def build(spec: str, **sizes):
    return build_arm(spec, **{**TINY, **sizes})


@formula("alibi")
@pytest.mark.parametrize("n_heads", [4, 8])
def test_alibi_slopes_and_bias(n_heads):
    position = build("alibi", n_heads=n_heads).position
    slopes = [2 ** (-8 * h / n_heads) for h in range(1, n_heads + 1)]
    assert position.slopes.tolist() == pytest.approx(slopes)
    bias = position.bias(T, torch.device("cpu"))
    for h in range(n_heads):
        for i in range(T):
            for j in range(i + 1):
                assert bias[h, i, j].item() == pytest.approx(-slopes[h] * (i - j))
    q, k = torch.randn(2, 1, 1, T, 16).unbind(0)  # ALiBi leaves q and k unrotated
    assert all(torch.equal(a, b) for a, b in zip(position.rotate(q, k), (q, k), strict=True))


def naive_rope(x: torch.Tensor, rot: int, base: float) -> torch.Tensor:
    """x (T, d_h): rotate dims (a, a + rot/2) by angle t·base^(−2a/rot); the rest pass."""
    out = x.clone()
    for t in range(x.shape[0]):
        for a in range(rot // 2):
            angle = t * base ** (-2 * a / rot)
            c, s = math.cos(angle), math.sin(angle)
            u, v = x[t, a].item(), x[t, a + rot // 2].item()
            out[t, a], out[t, a + rot // 2] = u * c - v * s, v * c + u * s
    return out


@formula("partial_rope", "rope_base_500k")
@pytest.mark.parametrize(
    ("spec", "rot", "base"),
    [("baseline", 16, 1e4), ("partial_rope", 4, 1e4), ("rope_base_500k", 16, 5e5)],
)
def test_rope_rotation_and_scores_depend_only_on_relative_position(spec, rot, base):
    position = build(spec).position
    q, k = torch.randn(2, T, 16).unbind(0)
    rq, rk = position.rotate(q[None, None], k[None, None])
    torch.testing.assert_close(rq[0, 0], naive_rope(q, rot, base), rtol=1e-4, atol=1e-5)
    # The same query and key at every position: scores must be constant along diagonals.
    same_q, same_k = q[:1].expand(T, 16), k[:1].expand(T, 16)
    rq, rk = position.rotate(same_q[None, None], same_k[None, None])
    scores = rq[0, 0] @ rk[0, 0].T
    for i in range(T - 1):
        for j in range(T - 1):
            assert scores[i + 1, j + 1].item() == pytest.approx(scores[i, j].item(), abs=1e-4)
    assert not torch.allclose(scores[0, 1], scores[0, 2])  # yet they do depend on i − j


def half_form_rope(x: torch.Tensor, rot: int, base: float) -> torch.Tensor:
    """The rotation written on the two halves, (x1·cos − x2·sin, x2·cos + x1·sin), with the
    float32 tables rounded from float64 angles, as `RoPE` builds them."""
    freqs = torch.outer(
        torch.arange(x.shape[-2], dtype=torch.float64),
        base ** (-torch.arange(0, rot, 2, dtype=torch.float64) / rot),
    )
    cos, sin = freqs.cos().float(), freqs.sin().float()
    x1, x2 = x[..., :rot].chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., rot:]), dim=-1)


@pytest.mark.parametrize(("spec", "rot"), [("baseline", 16), ("partial_rope", 4)])
def test_rope_full_width_form_has_the_half_forms_bits_forward_and_backward(spec, rot):
    """`RoPE` rotates in a full-width form for speed; its outputs and the gradients it passes
    back must be the half form's bit for bit, so that no training run changes by it. The
    input is a transposed view, as attention's (B, h, T, d_h) query is."""
    position = build(spec).position
    base = torch.randn(3, T, 4, 16)
    upstream = torch.randn(3, 4, T, 16)
    grads = []
    for rotate in (lambda x: position.rotate(x, x)[0], lambda x: half_form_rope(x, rot, 1e4)):
        x = base.clone().requires_grad_(True)
        y = rotate(x.transpose(1, 2))
        y.backward(upstream)
        grads.append((y.detach(), x.grad))
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])


@formula("nope")
def test_nope_last_position_ignores_the_order_of_the_prefix():
    # One causal layer without positions sees its prefix as a set: permuting the earlier
    # tokens leaves the last position's output unchanged. RoPE breaks this (the control).
    idx = torch.randint(0, 64, (1, T))
    shuffled = torch.cat((idx[:, : T - 1][:, torch.randperm(T - 1)], idx[:, -1:]), dim=1)
    for spec, invariant in (("nope", True), ("baseline", False)):
        model = build(spec, n_layers=1)
        same = torch.allclose(model(idx)[0, -1], model(shuffled)[0, -1], atol=1e-5)
        assert same is invariant, spec
    position = build("nope").position
    x = torch.randn(1, T, 64)
    assert torch.equal(position.embed(x), x) and position.bias(T, x.device) is None


@formula("sinusoidal")
def test_sinusoidal_adds_sin_cos_of_position_over_10000_power():
    position = build("sinusoidal").position
    pe = position.embed(torch.zeros(1, T, 64))[0]
    for t in range(T):
        for i in range(32):
            angle = t / 10000 ** (2 * i / 64)
            assert pe[t, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-5)
            assert pe[t, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-5)


@formula("learned_pos")
def test_learned_positions_add_row_t_of_a_t_by_d_table():
    position = build("learned_pos").position
    table = position.table.weight
    assert table.shape == (TINY["context_length"], 64) and table.requires_grad
    x = torch.randn(1, T, 64)
    torch.testing.assert_close(position.embed(x), x + table[:T])


@formula("irope")
def test_irope_skips_rope_in_every_fourth_layer_as_llama4():
    from archaudit.model.context import ForwardContext
    from archaudit.model.position import NoPE, rotates

    model = build("irope", n_layers=8)
    cfg = model.cfg
    pattern = [int(rotates(cfg, layer)) for layer in range(8)]
    assert pattern == [1, 1, 1, 0, 1, 1, 1, 0]
    llama4 = pytest.importorskip("transformers").Llama4TextConfig
    assert pattern == llama4(num_hidden_layers=8, no_rope_layer_interval=4).no_rope_layers
    x = torch.randn(2, 8, 64)
    for layer, block in enumerate(model.blocks):
        attention = block.attn
        with_rope = attention(x, ForwardContext(T=8, device=x.device, position=model.position))
        without = attention(x, ForwardContext(T=8, device=x.device, position=NoPE(cfg)))
        assert torch.equal(with_rope, without) == (not pattern[layer]), layer
    assert [rotates(build("irope", n_layers=2).cfg, layer) for layer in range(2)] == [True, False]
