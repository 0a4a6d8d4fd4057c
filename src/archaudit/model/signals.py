"""The signals that forecast a training instability, read from forward passes of the model.

Wortsman et al. 2023 ("Small-scale proxies for large-scale Transformer training instabilities",
arXiv 2309.14322) trace the failures seen at scale to two quantities that grow before the loss
breaks: the attention logits (§3.1, what qk-layernorm caps) and the output-logit normaliser
log Z = log Σ_v e^{z_v} (§3.2, what z-loss pulls to 0). `SignalCapture` records, while it is
open, per layer the largest attention logit any head produced and the RMS of each sublayer's
output (attention, MLP), and log Z over every position.

It works through forward hooks registered only while the context is open, so the model's code
path is untouched and costs nothing when no capture is open. The attention logits are
recomputed from the score function's own `logits` (soft-cap, ALiBi and learned scales
included): the fused softmax kernel never materialises them. A shared block (ALBERT sharing)
is one module: its values are taken over every call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from archaudit.model.context import AttnMask
from archaudit.model.scores import ScoreFunction
from archaudit.model.transformer import Transformer


@dataclass(frozen=True)
class Signals:
    """What one capture saw: per distinct block (build order) and over all positions."""

    attn_logit_max: tuple[float, ...]
    """Per block: the largest visible attention logit over heads, queries and keys."""
    rms_attn: tuple[float, ...]
    """Per block: RMS of the attention sublayer's output (mean over calls)."""
    rms_mlp: tuple[float, ...]
    log_z_mean: float
    """Mean over positions of log Z = logsumexp of the output logits."""
    log_z_max: float
    """Largest |log Z| over positions: z-loss penalises log Z², so its sign does not matter."""

    def to_json(self) -> dict[str, Any]:
        return {
            "attn_logit_max": list(self.attn_logit_max),
            "rms_attn": list(self.rms_attn),
            "rms_mlp": list(self.rms_mlp),
            "log_z_mean": self.log_z_mean,
            "log_z_max": self.log_z_max,
        }


@dataclass
class _Tally:
    """Running values of one capture: maxima and sums over calls."""

    logit_max: dict[int, float] = field(default_factory=dict)
    rms: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    log_z: list[torch.Tensor] = field(default_factory=list)


class SignalCapture:
    """`with SignalCapture(model) as capture: model(x)`, then `capture.signals()`."""

    def __init__(self, model: Transformer) -> None:
        self.model, self.tally = model, _Tally()
        self.handles: list[RemovableHandle] = []

    def __enter__(self) -> SignalCapture:
        for layer, block in enumerate(self.model.distinct_blocks()):
            for score in (m for m in block.attn.modules() if isinstance(m, ScoreFunction)):
                self.handles.append(score.register_forward_pre_hook(self._logit_hook(layer)))
            for name in ("attn", "mlp"):
                sublayer = getattr(block, name)
                self.handles.append(sublayer.register_forward_hook(self._rms_hook(name, layer)))
        self.handles.append(self.model.head.register_forward_hook(self._log_z_hook))
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()

    def _logit_hook(self, layer: int) -> Callable[..., None]:
        def hook(score: nn.Module, args: tuple[Any, ...]) -> None:
            q, k, _, mask = args
            assert isinstance(score, ScoreFunction) and isinstance(mask, AttnMask)
            with torch.no_grad():
                z = score.logits(q, k, mask).float().masked_fill(~mask.allowed, float("-inf"))
                peak = float(z.amax())
            self.tally.logit_max[layer] = max(peak, self.tally.logit_max.get(layer, float("-inf")))

        return hook

    def _rms_hook(self, name: str, layer: int) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple[Any, ...], out: torch.Tensor) -> None:
            with torch.no_grad():
                rms = float(out.detach().float().square().mean().sqrt())
            self.tally.rms.setdefault((name, layer), []).append(rms)

        return hook

    def _log_z_hook(self, module: nn.Module, args: tuple[Any, ...], logits: torch.Tensor) -> None:
        with torch.no_grad():
            self.tally.log_z.append(torch.logsumexp(logits.detach().float(), dim=-1).flatten())

    def signals(self) -> Signals:
        """The capture's values so far; a block never called reads NaN."""
        n = len(self.model.distinct_blocks())
        tally = self.tally
        log_z = torch.cat(tally.log_z) if tally.log_z else torch.full((1,), float("nan"))
        return Signals(
            attn_logit_max=tuple(tally.logit_max.get(b, float("nan")) for b in range(n)),
            rms_attn=tuple(_mean(tally.rms.get(("attn", b), [])) for b in range(n)),
            rms_mlp=tuple(_mean(tally.rms.get(("mlp", b), [])) for b in range(n)),
            log_z_mean=float(log_z.mean()),
            log_z_max=float(log_z.abs().max()),
        )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")
