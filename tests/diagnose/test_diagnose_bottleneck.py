"""The gradient bottleneck: analytic values on W with a known column space, and the model path
against a brute-force projection with explicit one-hot gradients."""

from __future__ import annotations

import math

import pytest
import torch
from diagnose_helpers import tiny_view

from archaudit.diagnose.bottleneck import column_basis, gradient_bottleneck, token_fractions

UNIFORM = torch.zeros(1, 4)  # softmax = 1/4 everywhere: with y = 0, g = (-3/4, 1/4, 1/4, 1/4)
Y0 = torch.tensor([0])


@pytest.mark.parametrize(
    ("W", "fraction"),
    [
        # col(W) = span(e0): ‖Pg‖² = 9/16 of ‖g‖² = 12/16, so 1/4 is lost.
        (torch.tensor([[2.0], [0.0], [0.0], [0.0]]), 1 / 4),
        # col(W) = span(e0, e1) through a mixing of its columns: ‖Pg‖² = 10/16, 1/6 lost.
        (torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.0, 0.0], [0.0, 0.0]]), 1 / 6),
        # col(W) = span(1): g sums to zero, so all of it is lost.
        (torch.ones(4, 1), 1.0),
        # col(W) = ℝ⁴: nothing is lost.
        (torch.randn(4, 4, generator=torch.Generator().manual_seed(0)), 0.0),
        # Rank-deficient W (two equal columns spanning e0): the SVD path, still 1/4.
        (torch.tensor([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]), 1 / 4),
    ],
)
def test_analytic_split(W: torch.Tensor, fraction: float) -> None:
    basis = column_basis(W)
    lost, cosine, norm2 = token_fractions(UNIFORM, Y0, basis)
    assert float(norm2) == pytest.approx(3 / 4)
    assert float(lost) == pytest.approx(fraction, abs=1e-6)
    assert float(cosine) == pytest.approx(math.sqrt(1 - fraction), abs=1e-6)


def test_rank_deficient_basis_has_the_true_rank() -> None:
    W = torch.randn(50, 3) @ torch.randn(3, 8)  # rank 3 in 8 columns
    basis = column_basis(W)
    assert basis.shape == (50, 3)
    assert torch.allclose(basis.T @ basis, torch.eye(3), atol=1e-5)


def test_matches_brute_force_projection() -> None:
    g = torch.Generator().manual_seed(1)
    V, D, N = 40, 6, 25
    W = torch.randn(V, D, generator=g)
    logits = torch.randn(N, V, generator=g) * 3
    targets = torch.randint(V, (N,), generator=g)
    lost, cosine, _ = token_fractions(logits, targets, column_basis(W))
    grad = torch.softmax(logits, -1) - torch.nn.functional.one_hot(targets, V)  # (N, V)
    projected = (W @ torch.linalg.lstsq(W, grad.T).solution).T  # least squares onto col(W)
    expected = 1 - projected.norm(dim=1) ** 2 / grad.norm(dim=1) ** 2
    assert torch.allclose(lost, expected, atol=1e-5)
    cos = torch.nn.functional.cosine_similarity(grad, projected, dim=1)
    assert torch.allclose(cosine, cos, atol=1e-5)


def test_model_path_reads_the_models_own_logits_and_head() -> None:
    view = tiny_view(n_layers=2)
    rows = torch.randint(256, (3, 17), generator=torch.Generator().manual_seed(2))
    result = gradient_bottleneck(view, rows, batch_size=2)
    with torch.no_grad():
        logits = view.model(rows[:, :-1]).flatten(0, 1)
    lost, cosine, _ = token_fractions(
        logits, rows[:, 1:].flatten(), column_basis(view.unembedding())
    )
    assert result.tokens == 48
    assert result.suppressed_fraction.mean == pytest.approx(float(lost.mean()), rel=1e-5)
    assert result.cosine.median == pytest.approx(float(cosine.median()), abs=0.02)
    assert (result.vocab_size, result.d_model, result.rank) == (256, 32, 32)
    assert result.tied == bool(view.model.cfg.head.tie_embeddings)
    assert result.chance_fraction == pytest.approx(1 - 32 / 256)
    assert "_per_token" not in result.to_dict()


def test_tied_and_untied_heads_are_told_apart() -> None:
    assert tiny_view(n_layers=1, head={"tie_embeddings": True}).tied()
    assert not tiny_view(n_layers=1, head={"tie_embeddings": False}).tied()
