"""Layer pruning: score the layers, choose K to remove (or merge), build the smaller model.

Scores come from one pass that records every layer's input and output residual stream x:
- block influence (ShortGPT, Men et al. 2024, arXiv 2403.03853): BI_l = 1 − E_t[cos(x_in, x_out)],
  low for a layer that barely changes the stream;
- angular distance (Gromov et al. 2024, "The Unreasonable Ineffectiveness of the Deeper Layers",
  arXiv 2403.17887): d(l, n) = E_t[arccos(cos(x_in^l, x_out^{l+n−1}))]/π for the run of n
  layers starting at l; they read the last token only, here it is averaged over every position.

Methods (a registry; each maps scores and K to a plan):
- `block-influence`: drop the K layers of lowest BI;
- `angular`: drop the run of K consecutive layers whose ends are closest (Gromov et al.);
- `tail`: drop the K deepest layers before the last one (Gromov et al.'s simple heuristic);
- `laco`: merge a run of K + 1 consecutive layers into one by LaCo's reserving-differences rule
  θ = θ_l + Σ_k (θ_{l+k} − θ_l) (Yang et al. 2024, arXiv 2402.11187), the run chosen by angular
  distance (LaCo picks it by output similarity on calibration text, which this approximates).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from archaudit.diagnose.access import ModelView
from archaudit.errors import ConfigError
from archaudit.progress import progress
from archaudit.registry import Registry
from archaudit.stats.records.serialize import JsonResult


@dataclass(frozen=True)
class LayerScores(JsonResult):
    block_influence: list[float]
    """Per layer: 1 − mean cos(x_in, x_out)."""
    angular_distance: list[list[float]]
    """[l][m], m ≥ l: mean arccos(cos(x_in^l, x_out^m))/π; NaN below the diagonal."""

    def run_distance(self, n: int) -> list[float]:
        """d(l, n) for every start l of a run of n layers."""
        L = len(self.block_influence)
        return [self.angular_distance[start][start + n - 1] for start in range(L - n + 1)]


def _cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a, b, dim=-1).clamp(-1.0, 1.0)


def layer_scores(view: ModelView, rows: torch.Tensor, *, batch_size: int = 8) -> LayerScores:
    """Block influence and all-runs angular distance over the input positions of `rows`."""
    L = len(view.layers())
    influence = torch.zeros(L, dtype=torch.float64)
    angular = torch.zeros(L, L, dtype=torch.float64)
    count = 0
    with progress("layer scores", rows.shape[0]) as bar:
        for start in range(0, rows.shape[0], batch_size):
            io = view.layer_io(rows[start : start + batch_size, :-1])
            for l, (x_in, x_out) in enumerate(io):
                influence[l] += float((1 - _cosine(x_in, x_out)).sum())
                for m in range(l, L):
                    angle = torch.arccos(_cosine(x_in, io[m][1])) / math.pi
                    angular[l, m] += float(angle.sum())
            count += io[0][0].shape[0] * io[0][0].shape[1]
            bar.update(advance=min(batch_size, rows.shape[0] - start))
    angular /= count
    lower = torch.tril(torch.ones(L, L, dtype=torch.bool), diagonal=-1)
    angular[lower] = math.nan
    return LayerScores((influence / count).tolist(), angular.tolist())


@dataclass(frozen=True)
class PrunePlan(JsonResult):
    method: str
    removed: tuple[int, ...]
    """Layers gone from the stack (for `laco`, the ones merged into `merged_into`)."""
    merged_into: int | None = None


PruneMethod = Callable[[LayerScores, int], PrunePlan]
PRUNE_METHODS: Registry[PruneMethod] = Registry("pruning method")


@PRUNE_METHODS.register("block-influence")
def _block_influence(scores: LayerScores, k: int) -> PrunePlan:
    order = sorted(range(len(scores.block_influence)), key=lambda i: scores.block_influence[i])
    return PrunePlan("block-influence", tuple(sorted(order[:k])))


def _closest_run(scores: LayerScores, n: int) -> int:
    distances = scores.run_distance(n)
    return min(range(len(distances)), key=lambda i: distances[i])


@PRUNE_METHODS.register("angular")
def _angular(scores: LayerScores, k: int) -> PrunePlan:
    start = _closest_run(scores, k)
    return PrunePlan("angular", tuple(range(start, start + k)))


@PRUNE_METHODS.register("tail")
def _tail(scores: LayerScores, k: int) -> PrunePlan:
    last = len(scores.block_influence) - 1
    return PrunePlan("tail", tuple(range(last - k, last)))


@PRUNE_METHODS.register("laco")
def _laco(scores: LayerScores, k: int) -> PrunePlan:
    start = _closest_run(scores, k + 1)
    return PrunePlan("laco", tuple(range(start + 1, start + k + 1)), merged_into=start)


def choose_layers(method: str, scores: LayerScores, k: int) -> PrunePlan:
    L = len(scores.block_influence)
    if not 1 <= k <= L - 1:
        raise ConfigError(f"--layers {k}: remove between 1 and {L - 1} of the model's {L} layers")
    return PRUNE_METHODS.get(method)(scores, k)


def merge_layers(layers: list[nn.Module]) -> nn.Module:
    """LaCo's reserving-differences merge: θ = θ_0 + Σ_{k≥1} (θ_k − θ_0), per parameter."""
    merged = copy.deepcopy(layers[0])
    others = [dict(layer.named_parameters()) for layer in layers[1:]]
    with torch.no_grad():
        for name, param in merged.named_parameters():
            base = param.detach().clone()
            for other in others:
                param.add_(other[name] - base)
    return merged


def pruned_view(view: ModelView, plan: PrunePlan) -> ModelView:
    """A copy of the model with the plan's layers removed (or merged)."""
    layers = view.layers()
    stack: list[int | nn.Module] = []
    for i in range(len(layers)):
        if i == plan.merged_into:
            stack.append(merge_layers([layers[i]] + [layers[j] for j in plan.removed]))
        elif i not in plan.removed:
            stack.append(i)
    return view.rebuilt(stack)
