"""Catalogue entries against re-typed reference implementations, in float64.

Each reference below is typed from the paper's equations (quoted in its docstring) and the
authors' code, never copied; it takes the weights of our module as inputs and computes the
method with plain tensor algebra. The largest difference measured must be ≤ 1e-8 and within
the bound the entry records in its `check` (what `archaudit mods show` prints).
"""

from __future__ import annotations

import math

import pytest
import torch
from test_mods_support import build_arm, formula

from archaudit.model.context import AttnMask, ForwardContext
from archaudit.mods import get_modification

TINY = dict(vocab_size=64, context_length=16, d_model=32, n_layers=2, n_heads=4)
T = 8  # shorter than the context length, so "n = maximum length" and "n = T" differ
F64 = torch.float64


def measured_within_record(name: str, ours: torch.Tensor, reference: torch.Tensor) -> float:
    diff = (ours - reference).abs().max().item()
    print(f"{name}: largest |ours − reference| = {diff:.3g}")
    assert diff <= 1e-8, f"{name}: |ours − reference| = {diff:.3g}"
    check = get_modification(name).check
    assert check is not None, f"{name} records no reference check"
    assert diff <= check.max_abs_diff, f"{name}: measured {diff:.3g} > recorded bound"
    return diff


# ---------------------------------------------------------------------------------------------
# HybridNorm (Zhuo et al. 2025, arXiv 2503.04598; code BryceZhuo/HybridNorm)


def rmsnorm(x: torch.Tensor, gain: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gain


def rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate-half RoPE (Su et al. 2021) on (..., T, d_h): pair (i, i + d_h/2) turns by t·θ_i."""
    t, d = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=F64) / d)
    angle = torch.arange(t, dtype=F64)[:, None] * theta[None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat((x1 * angle.cos() - x2 * angle.sin(), x2 * angle.cos() + x1 * angle.sin()), -1)


def causal_softmax(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    z = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.ones(z.shape[-2:], dtype=torch.bool).triu(1)
    return torch.softmax(z.masked_fill(future, float("-inf")), -1) @ v


def hybrid_block(x, W, g, ffn_residual_after_norm: bool):  # type: ignore[no-untyped-def]
    """One HybridNorm block, as the paper writes it (h heads of width d_h):

        Q = Norm_Q(X·W_Q), K = Norm_K(X·W_K), V = Norm_V(X·W_V)       (each head; RoPE on Q, K)
        Y = X + softmax(Q·Kᵀ/√d_h + M)·V·W_O                           (no attention input norm)
        Z = Norm(Y);  X′ = Z + FFN(Z)                                  (the paper's panel (d))

    The reference code's flags are attn_norm = false, ffn_norm = true and
    ffn_residual_after_norm = true. With `ffn_residual_after_norm=False` the last line is the
    textbook Post-Norm X′ = Norm(Y + FFN(Y)) instead. FFN is SwiGLU: (SiLU(Z·W1) ⊙ Z·W3)·W2.
    """
    B, n, _ = x.shape
    h, d_h = 4, 8

    def heads(w):  # type: ignore[no-untyped-def]
        return (x @ w.T).view(B, n, h, d_h).transpose(1, 2)

    q = rope(rmsnorm(heads(W["q"]), g["q"]))
    k = rope(rmsnorm(heads(W["k"]), g["k"]))
    v = rmsnorm(heads(W["v"]), g["v"])
    y = x + causal_softmax(q, k, v).transpose(1, 2).reshape(B, n, h * d_h) @ W["o"].T

    def ffn(z):  # type: ignore[no-untyped-def]
        return (torch.nn.functional.silu(z @ W["w1"].T) * (z @ W["w3"].T)) @ W["w2"].T

    if ffn_residual_after_norm:
        z = rmsnorm(y, g["ffn"])
        return z + ffn(z)
    return rmsnorm(y + ffn(y), g["ffn"])


@formula("hybrid_norm", "hybrid_norm_post")
@pytest.mark.parametrize(
    ("name", "after_norm"), [("hybrid_norm", True), ("hybrid_norm_post", False)]
)
def test_hybrid_norm_block_matches_the_reference_equations(name, after_norm):
    model = build_arm(name, **TINY).double()
    block = model.blocks[0]
    attn, mlp = block.attn, block.mlp
    with torch.no_grad():
        for norm in (attn.q_norm, attn.k_norm, attn.v_norm, block.mlp_norm):
            norm.weight.uniform_(0.5, 1.5)
    W = {
        "q": attn.q_proj.weight, "k": attn.k_proj.weight, "v": attn.v_proj.weight,
        "o": attn.o_proj.weight, "w1": mlp.w1.weight, "w2": mlp.w2.weight,
        "w3": mlp.w3.weight,
    }  # fmt: skip
    g = {"q": attn.q_norm.weight, "k": attn.k_norm.weight, "v": attn.v_norm.weight}
    g["ffn"] = block.mlp_norm.weight
    torch.manual_seed(1)
    x = torch.randn(2, T, 32, dtype=F64)
    ctx = ForwardContext(T=T, device=torch.device("cpu"), position=model.position)
    with torch.no_grad():
        ours = block(x, ctx)
        reference = hybrid_block(x, W, g, ffn_residual_after_norm=after_norm)
    measured_within_record(name, ours, reference)
    assert [n for n, _ in block.named_children()] == ["attn", "mlp", "mlp_norm"]  # no attn norm


# ---------------------------------------------------------------------------------------------
# Sigmoid attention (Ramapuram et al. 2024, arXiv 2409.04431; code apple/ml-sigmoid-attention)


def sigmoid_attention(q, k, v, bias):  # type: ignore[no-untyped-def]
    """SigmoidAttn(X) = σ(Q·Kᵀ/√d_qk + b)·V, elementwise, no normalisation over keys; masked
    (future) keys get weight 0. The paper and its reference code use one scalar b = −log n,
    n the (maximum) sequence length; `bias` may also be a column (T, 1) of per-query values."""
    z = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.ones(z.shape[-2:], dtype=torch.bool).triu(1)
    return torch.sigmoid(z + bias).masked_fill(future, 0.0) @ v


SIGMOID_BIAS = {
    "sigmoid_attn": -math.log(TINY["context_length"]),  # one b = −log n_max
    "sigmoid_attn_per_position": -torch.log(torch.arange(1, T + 1, dtype=F64))[:, None],
}


@formula(*SIGMOID_BIAS)
@pytest.mark.parametrize("name", sorted(SIGMOID_BIAS))
def test_sigmoid_attention_matches_the_reference_equation(name):
    score = build_arm(name, **TINY).double().blocks[0].attn.score
    torch.manual_seed(2)
    q, k, v = (torch.randn(2, 4, T, 8, dtype=F64) * 2 for _ in range(3))
    i = torch.arange(T)
    mask = AttnMask(i[:, None] >= i[None, :], None, causal_only=False)
    with torch.no_grad():
        ours = score(q, k, v, mask)
    measured_within_record(name, ours, sigmoid_attention(q, k, v, SIGMOID_BIAS[name]))
