"""Formula tests for everything computed inside attention: score functions, logits, gates,
differential maps, QK(V)-norm, GQA, sliding windows and value residuals.

Each test takes the component from a model built by the arm and compares it with a naive
computation written here: explicit loops over heads, queries and visible keys, softmax as
exp / sum. Arms are composed with `nope` where RoPE would only obscure the formula.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from test_mods_support import build_arm, formula, rms
from torch import nn

from archaudit.model.context import AttnMask, ForwardContext

TINY = dict(vocab_size=64, context_length=16, d_model=32, n_layers=2, n_heads=4)
T = 8  # sequence length used in the tests (≤ context_length)


def build(spec: str, **sizes):
    return build_arm(spec, **{**TINY, **sizes})


def attention(spec: str, layer: int = 0, **sizes):
    """The attention module of one layer, and a forward context for a length-T input."""
    model = build(spec, **sizes)
    ctx = ForwardContext(T=T, device=torch.device("cpu"), position=model.position)
    return model.blocks[layer].attn, ctx


def causal(n: int, window: int | None = None) -> AttnMask:
    i = torch.arange(n)
    allowed = i[:, None] >= i[None, :]
    if window is not None:
        allowed &= i[:, None] - i[None, :] < window
    return AttnMask(allowed, None, causal_only=False)


def visible(i: int, window: int | None = None) -> range:
    return range(0 if window is None else max(0, i - window + 1), i + 1)


def expect_row(actual: torch.Tensor, expected: dict[int, float], rel: float = 1e-4) -> None:
    """Row of weights over all keys: `expected` at the visible keys, zero elsewhere."""
    full = [expected.get(j, 0.0) for j in range(actual.shape[-1])]
    assert actual.tolist() == pytest.approx(full, rel=rel, abs=1e-6)


def randomize(*params: nn.Parameter) -> None:
    with torch.no_grad():
        for p in params:
            p.copy_(torch.rand_like(p) + 0.5)


# ---------------------------------------------------------------------------------------------
# score functions: weights(z, mask) per query row


@formula("softpick")
def test_softpick_is_rectified_and_rows_may_be_all_zero():
    score = attention("softpick")[0].score
    z = torch.randn(2, 4, T, T) * 2
    z[0, 1, 5, :6] = -torch.rand(6) - 0.1  # every visible e^z − 1 < 0: nothing is picked
    z.requires_grad_()
    w = score.weights(z, causal(T))
    for b, h, i in itertools.product(range(2), range(4), range(T)):
        e = {j: math.exp(z[b, h, i, j].item()) - 1 for j in visible(i)}
        denominator = sum(abs(v) for v in e.values())
        expect_row(w[b, h, i], {j: max(v, 0.0) / denominator for j, v in e.items()}, rel=1e-3)
    assert w[0, 1, 5].abs().sum() == 0
    assert (w.sum(-1) <= 1 + 1e-6).all() and (w.sum(-1) < 0.99).any()
    w.sum().backward()
    assert torch.isfinite(z.grad).all()


@formula("ssmax")
@pytest.mark.parametrize("window", [None, 3])
def test_ssmax_is_softmax_of_s_log_n_times_z_per_query(window):
    score = attention("ssmax")[0].score
    s = torch.tensor([0.2, 0.43, 0.9, 1.5])
    with torch.no_grad():
        score.s.copy_(s)
    z = torch.randn(1, 4, T, T)
    w = score.weights(z, causal(T, window))
    for h, i in itertools.product(range(4), range(T)):
        keys = visible(i, window)
        scale = s[h].item() * math.log(len(keys))  # n = keys this query may see
        e = {j: math.exp(scale * z[0, h, i, j].item()) for j in keys}
        expect_row(w[0, h, i], {j: v / sum(e.values()) for j, v in e.items()})


@formula("sink_softmax", "sink_softmax_learned")
@pytest.mark.parametrize("spec", ["sink_softmax", "sink_softmax_learned"])
def test_sink_softmax_adds_a_sink_logit_to_the_normaliser(spec):
    score = attention(spec)[0].score
    sinks = torch.zeros(4)
    if spec == "sink_softmax_learned":
        sinks = torch.tensor([-1.0, 0.0, 0.5, 2.0])
        with torch.no_grad():
            score.sink_logit.copy_(sinks)
    z = torch.randn(1, 4, T, T)
    w = score.weights(z, causal(T))
    for h, i in itertools.product(range(4), range(T)):
        e = {j: math.exp(z[0, h, i, j].item()) for j in visible(i)}
        normaliser = math.exp(sinks[h].item()) + sum(e.values())
        expect_row(w[0, h, i], {j: v / normaliser for j, v in e.items()})
    assert (w.sum(-1) < 1).all()  # the sink always takes a share


@formula("talking_heads")
def test_talking_heads_mix_logits_before_and_weights_after_the_softmax():
    score = attention("talking_heads")[0].score
    P, Q = torch.randn(4, 4), torch.randn(4, 4)
    with torch.no_grad():
        score.pre.copy_(P)
        score.post.copy_(Q)
    z = torch.randn(1, 4, T, T)
    w = score.weights(z, causal(T))
    for i in range(T):
        keys = visible(i)
        mixed = [
            [sum(P[h, g].item() * z[0, h, i, j].item() for h in range(4)) for j in keys]
            for g in range(4)
        ]
        soft = [[math.exp(v) / sum(math.exp(u) for u in row) for v in row] for row in mixed]
        for g in range(4):
            out = [sum(Q[h, g].item() * soft[h][n] for h in range(4)) for n in range(len(keys))]
            expect_row(w[0, g, i], dict(zip(keys, out, strict=True)), rel=1e-3)


@formula("qk_l2norm")
def test_qk_l2norm_is_softmax_of_g_times_cosine_similarity():
    score = attention("qk_l2norm")[0].score
    assert score.g.item() == pytest.approx(math.log2(16 * 16 - 16))  # g₀ = log₂(T² − T)
    with torch.no_grad():
        score.g.fill_(3.0)
    q, k, v = torch.randn(1, 4, T, 8) * 5, torch.randn(1, 4, T, 8), torch.randn(1, 4, T, 8)
    out = score(q, k, v, causal(T))
    for h, i in itertools.product(range(4), range(T)):
        cos = {j: (q[0, h, i] @ k[0, h, j] / (q[0, h, i].norm() * k[0, h, j].norm())).item()
               for j in visible(i)}  # fmt: skip
        e = {j: math.exp(3.0 * c) for j, c in cos.items()}
        expected = sum(e[j] / sum(e.values()) * v[0, h, j] for j in e)
        torch.testing.assert_close(out[0, h, i], expected, rtol=1e-4, atol=1e-5)


@formula("logit_softcap")
def test_logit_softcap_is_c_tanh_z_over_c():
    score = attention("logit_softcap")[0].score
    q, k = torch.randn(1, 4, T, 8) * 8, torch.randn(1, 4, T, 8) * 8
    z = score.logits(q, k, causal(T))
    raw = torch.zeros(1, 4, T, T)
    for h, i, j in itertools.product(range(4), range(T), range(T)):
        raw[0, h, i, j] = sum(q[0, h, i, e] * k[0, h, j, e] for e in range(8)) / math.sqrt(8)
    torch.testing.assert_close(z, 50 * torch.tanh(raw / 50))
    assert raw.abs().max() > 50 > z.abs().max()


# ---------------------------------------------------------------------------------------------
# whole attention modules: projections, per-head attention, output projection


def split(x: torch.Tensor, weight: torch.Tensor, width: int) -> list[torch.Tensor]:
    """x (T, d) projected by `weight`, cut into heads of `width`: a list of (T, width)."""
    return list((x @ weight.T).split(width, dim=-1))


def attend(q, k, v, window: int | None = None) -> torch.Tensor:
    """One head, causal softmax attention written out: (T, d_h) each → (T, d_v)."""
    out = torch.zeros(q.shape[0], v.shape[1])
    for i in range(q.shape[0]):
        keys = list(visible(i, window))
        z = torch.stack([q[i] @ k[j] for j in keys]) / math.sqrt(q.shape[1])
        e = torch.exp(z - z.max())
        out[i] = sum(wt * v[j] for wt, j in zip(e / e.sum(), keys, strict=True))
    return out


def qkv(attn, x):
    d_h = attn.d_h
    return (
        split(x, attn.q_proj.weight, d_h),
        split(x, attn.k_proj.weight, d_h),
        split(x, attn.v_proj.weight, d_h),
    )


@formula("qk_norm")
def test_qk_norm_normalises_queries_and_keys_per_head():
    attn, ctx = attention("qk_norm+nope")
    randomize(attn.q_norm.weight, attn.k_norm.weight)
    x = torch.randn(1, T, 32)
    q, k, v = qkv(attn, x[0])
    gq, gk = attn.q_norm.weight, attn.k_norm.weight
    heads = [attend(rms(q[h], gq), rms(k[h], gk), v[h]) for h in range(4)]
    torch.testing.assert_close(attn(x, ctx)[0], torch.cat(heads, -1) @ attn.o_proj.weight.T)


@formula("gated_attn", "gated_attn_headwise")
@pytest.mark.parametrize("spec", ["gated_attn", "gated_attn_headwise"])
def test_gated_attention_multiplies_by_sigmoid_of_x_wg_before_wo(spec):
    attn, ctx = attention(f"{spec}+nope")
    x = torch.randn(1, T, 32)
    q, k, v = qkv(attn, x[0])
    gate = torch.sigmoid(x[0] @ attn.gate.weight.T)  # (T, h·d_h) or (T, h)
    width = 8 if spec == "gated_attn" else 1
    heads = [attend(q[h], k[h], v[h]) * gate[:, h * width : (h + 1) * width] for h in range(4)]
    torch.testing.assert_close(attn(x, ctx)[0], torch.cat(heads, -1) @ attn.o_proj.weight.T)


@formula("gqa")
def test_gqa_query_head_i_reads_kv_head_i_over_2():
    attn, ctx = attention("gqa+nope")
    assert attn.k_proj.weight.shape[0] == 2 * 8  # two K/V heads for four query heads
    x = torch.randn(1, T, 32)
    q, k, v = qkv(attn, x[0])
    heads = [attend(q[h], k[h // 2], v[h // 2]) for h in range(4)]
    torch.testing.assert_close(attn(x, ctx)[0], torch.cat(heads, -1) @ attn.o_proj.weight.T)


@formula("swa")
def test_swa_windows_three_of_four_layers_to_a_quarter_of_the_context():
    model = build("swa+nope", n_layers=4)
    window = TINY["context_length"] // 4
    assert [b.attn.window for b in model.blocks] == [window, window, window, None]
    attn = model.blocks[0].attn
    ctx = ForwardContext(T=T, device=torch.device("cpu"), position=model.position)
    x = torch.randn(1, T, 32)
    q, k, v = qkv(attn, x[0])
    heads = [attend(q[h], k[h], v[h], window) for h in range(4)]
    torch.testing.assert_close(attn(x, ctx)[0], torch.cat(heads, -1) @ attn.o_proj.weight.T)


@formula("value_residual")
def test_value_residual_mixes_in_the_first_layers_values():
    first, _ = attention("value_residual+nope", layer=0)
    assert first.value_lambdas is None  # the first layer's values are V_1 itself
    attn, ctx = attention("value_residual+nope", layer=1)
    lambdas = torch.tensor([0.3, 1.2])
    with torch.no_grad():
        attn.value_lambdas.copy_(lambdas)
    v_first = torch.randn(1, 4, T, 8)
    ctx.v_first = v_first
    x = torch.randn(1, T, 32)
    q, k, v = qkv(attn, x[0])
    heads = [attend(q[h], k[h], lambdas[0] * v[h] + lambdas[1] * v_first[0, h]) for h in range(4)]
    torch.testing.assert_close(attn(x, ctx)[0], torch.cat(heads, -1) @ attn.o_proj.weight.T)


@formula("diff_attn")
def test_diff_attn_lambda_init_schedule_by_layer():
    model = build("diff_attn", n_layers=4)
    for l, block in enumerate(model.blocks, start=1):  # 1-based layer index l
        assert block.attn.lambda_init == pytest.approx(0.8 - 0.6 * math.exp(-0.3 * (l - 1)))


def test_diff_attn_subtracts_lambda_times_the_second_map():
    attn, ctx = attention("diff_attn+nope", layer=1)
    randomize(attn.out_norm.weight)
    q1, k1, q2, k2 = (p.detach() for p in attn.lambdas)
    lam = math.exp(q1 @ k1) - math.exp(q2 @ k2) + attn.lambda_init
    assert attn.lam().item() == pytest.approx(lam, rel=1e-5)
    x = torch.randn(1, T, 32)
    q, k = split(x[0], attn.q_proj.weight, 8), split(x[0], attn.k_proj.weight, 8)
    v = split(x[0], attn.v_proj.weight, 16)  # h/2 = 2 heads of 2·d_h
    heads = []
    for i in range(2):  # head pair i: query/key heads 2i and 2i + 1, value head i
        y = attend(q[2 * i], k[2 * i], v[i]) - lam * attend(q[2 * i + 1], k[2 * i + 1], v[i])
        heads.append(rms(y, attn.out_norm.weight) * (1 - attn.lambda_init))
    expected = torch.cat(heads, -1) @ attn.o_proj.weight.T
    torch.testing.assert_close(attn(x, ctx)[0], expected, rtol=1e-4, atol=1e-5)
