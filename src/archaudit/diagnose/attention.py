"""Attention focus per layer and head: sink mass on the first tokens, entropy, and mass by distance.

Attention sinks (Xiao et al. 2023, StreamingLLM): most heads of a trained LM park a large share
of their weight on the first token. OlmPool (Ai2, 2026) finds that this focus goes with better
long-context retrieval and that QK-norm weakens it; `focus.py` tests that across an audit's arms.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from archaudit.diagnose.access import ModelView
from archaudit.progress import progress
from archaudit.stats.records.serialize import JsonResult


def distance_edges(T: int) -> list[int]:
    """Bucket edges 0, 1, 2, 4, 8, …: bucket b holds distances t − s in [edge_b, edge_{b+1})."""
    edges = [0, 1]
    while edges[-1] < T:
        edges.append(2 * edges[-1])
    return edges


def bucket_label(low: int, high: int) -> str:
    return str(low) if high == low + 1 else f"{low}-{high - 1}"


@dataclass(frozen=True)
class AttentionResult(JsonResult):
    model: str
    tokens: int
    window: int
    sink_tokens: int
    """k: sink mass is the weight a query puts on the first k positions (queries t ≥ k)."""
    sink_mass: list[list[float]]
    """[layer][head]."""
    entropy: list[list[float]]
    """[layer][head], nats, mean over queries t ≥ 1."""
    distance_buckets: list[str]
    distance_mass: list[list[list[float]]]
    """[layer][head][bucket]: mean weight at distances in the bucket."""
    sink_mass_per_layer: list[float]
    """Mean over heads."""
    sink_mass_mean: float
    """Mean over layers and heads: the one number compared across arms."""


def map_statistics(
    maps: torch.Tensor, k: int, buckets: torch.Tensor, n_buckets: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sums over batch and queries of sink mass (h,), entropy (h,), bucket mass (h, n_buckets)
    for one layer's maps (B, h, T, T)."""
    sink = maps[:, :, k:, :k].sum(-1).sum((0, 2))
    plogp = torch.where(maps > 0, maps * maps.clamp_min(1e-30).log(), 0.0)
    entropy = (-plogp.sum(-1))[:, :, 1:].sum((0, 2))
    per_query = maps.sum(0)  # (h, T, T)
    mass = torch.zeros(maps.shape[1], n_buckets, dtype=maps.dtype, device=maps.device)
    mass.index_add_(1, buckets.flatten(), per_query.flatten(1))
    return sink, entropy, mass


def attention_focus(
    view: ModelView, rows: torch.Tensor, *, sink_tokens: int = 1, batch_size: int = 4
) -> AttentionResult:
    """Attention statistics over the input positions of `rows` (n, T + 1)."""
    inputs = rows[:, :-1]
    B, T = inputs.shape
    edges = distance_edges(T)
    t = torch.arange(T)
    distance = (t[:, None] - t[None, :]).clamp_min(0)
    buckets = torch.bucketize(distance, torch.tensor(edges), right=True) - 1  # (T, T)
    n_buckets = len(edges) - 1
    sums: list[list[torch.Tensor]] | None = None
    with torch.no_grad(), progress("attention", B) as bar:
        for start in range(0, B, batch_size):
            maps = view.attention_maps(inputs[start : start + batch_size])
            stats = [map_statistics(m.cpu(), sink_tokens, buckets, n_buckets) for m in maps]
            if sums is None:
                sums = [list(s) for s in stats]
            else:
                for acc, s in zip(sums, stats, strict=True):
                    for i in range(3):
                        acc[i] += s[i]
            bar.update(advance=min(batch_size, B - start))
    assert sums is not None
    sink = [(s[0] / (B * (T - sink_tokens))).tolist() for s in sums]
    entropy = [(s[1] / (B * (T - 1))).tolist() for s in sums]
    mass = [(s[2] / (B * T)).tolist() for s in sums]
    per_layer = [sum(heads) / len(heads) for heads in sink]
    return AttentionResult(
        model=view.name,
        tokens=B * T,
        window=T,
        sink_tokens=sink_tokens,
        sink_mass=sink,
        entropy=entropy,
        distance_buckets=[bucket_label(a, b) for a, b in itertools.pairwise(edges)],
        distance_mass=mass,
        sink_mass_per_layer=per_layer,
        sink_mass_mean=sum(per_layer) / len(per_layer),
    )
