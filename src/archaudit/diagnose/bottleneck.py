"""The LM-head gradient bottleneck (*Lost in Backpropagation*, arXiv 2603.10145).

For cross-entropy the gradient with respect to the logits of one token is g = softmax(z) − e_y,
a vector in vocabulary space (size V). With logits z = W·h, the network below the head receives
only Wᵀg, so the component of g outside the column space of W (V×D, D ≪ V) is lost. With U an
orthonormal basis of col(W), the suppressed fraction is 1 − ‖Uᵀg‖²/‖g‖², and the cosine between
g and its projection UUᵀg is ‖Uᵀg‖/‖g‖. Uᵀg = Uᵀp − U[y], so no V×V matrix and no one-hot
vector is ever built.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from archaudit.diagnose.access import ModelView
from archaudit.progress import progress
from archaudit.stats.records.serialize import JsonResult

RANK_TOL = 1e-6
"""A diagonal entry of R below this times the largest one sends W to the SVD for its rank."""


def column_basis(W: torch.Tensor) -> torch.Tensor:
    """An orthonormal basis (V×r) of the column space of W (V×D), in float32: thin QR, or an
    SVD with its numerical rank when QR shows W to be rank-deficient."""
    W = W.detach().float()
    Q, R = torch.linalg.qr(W, mode="reduced")
    diagonal = R.diagonal().abs()
    if diagonal.min() > RANK_TOL * diagonal.max():
        return Q
    U, S, _ = torch.linalg.svd(W, full_matrices=False)
    tolerance = S.max() * max(W.shape) * torch.finfo(torch.float32).eps  # numpy's matrix_rank
    return U[:, tolerance < S]


def token_fractions(
    logits: torch.Tensor, targets: torch.Tensor, basis: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits (N, V), targets (N,), basis U (V, r) → per token (suppressed fraction, cosine,
    ‖g‖²)."""
    p = torch.softmax(logits.float(), dim=-1)  # (N, V)
    p_y = p.gather(1, targets[:, None]).squeeze(1)
    g_norm2 = (p * p).sum(-1) - 2 * p_y + 1  # ‖p − e_y‖²
    projected = p @ basis - basis[targets]  # Uᵀg, (N, r)
    kept = (projected * projected).sum(-1) / g_norm2
    kept = kept.clamp(0.0, 1.0)  # float rounding when g lies (almost) inside col(W)
    return 1.0 - kept, kept.sqrt(), g_norm2


@dataclass(frozen=True)
class Distribution(JsonResult):
    mean: float
    q25: float
    median: float
    q75: float

    @classmethod
    def of(cls, values: np.ndarray) -> Distribution:
        q25, median, q75 = np.quantile(values, [0.25, 0.5, 0.75])
        return cls(float(values.mean()), float(q25), float(median), float(q75))


@dataclass(frozen=True)
class BottleneckResult(JsonResult):
    model: str
    tokens: int
    vocab_size: int
    d_model: int
    rank: int
    """Dimension of col(W): d_model unless W is rank-deficient."""
    tied: bool
    """Whether the unembedding is the input embedding matrix."""
    suppressed_fraction: Distribution
    """1 − ‖Uᵀg‖²/‖g‖² over tokens: the share of the logit gradient's squared norm lost."""
    cosine: Distribution
    """cos(g, UUᵀg) over tokens."""
    suppressed_fraction_pooled: float
    """1 − Σ‖Uᵀg‖²/Σ‖g‖²: the fraction of all the gradient's squared norm in the sample."""
    chance_fraction: float
    """1 − r/V: the expected fraction for a gradient pointing in a random direction."""
    _per_token: tuple[np.ndarray, ...] = field(default=(), repr=False, compare=False)
    """(fractions, cosines) per token, for the figure, or () when not kept. Not written to
    JSON."""


def gradient_bottleneck(
    view: ModelView, rows: torch.Tensor, *, batch_size: int = 8
) -> BottleneckResult:
    """The bottleneck over every prediction in `rows` (n, T + 1): inputs row[:-1], targets
    row[1:]."""
    W = view.unembedding()
    basis = column_basis(W).to(view.device)
    fractions, cosines, lost, total = [], [], 0.0, 0.0
    with (
        torch.no_grad(),
        progress("bottleneck", rows.shape[0] * (rows.shape[1] - 1)) as bar,
    ):
        for start in range(0, rows.shape[0], batch_size):
            batch = rows[start : start + batch_size].to(view.device)
            logits = view.logits(batch[:, :-1]).flatten(0, 1)  # (N, V)
            targets = batch[:, 1:].flatten()
            frac, cos, g2 = token_fractions(logits, targets, basis)
            lost += float((frac * g2).sum())
            total += float(g2.sum())
            fractions.append(frac.cpu().numpy())
            cosines.append(cos.cpu().numpy())
            bar.update(advance=targets.numel())
    frac_all, cos_all = np.concatenate(fractions), np.concatenate(cosines)
    V, D = W.shape
    return BottleneckResult(
        model=view.name,
        tokens=len(frac_all),
        vocab_size=int(V),
        d_model=int(D),
        rank=int(basis.shape[1]),
        tied=view.tied(),
        suppressed_fraction=Distribution.of(frac_all),
        cosine=Distribution.of(cos_all),
        suppressed_fraction_pooled=lost / total,
        chance_fraction=1.0 - basis.shape[1] / V,
        _per_token=(frac_all, cos_all),
    )
