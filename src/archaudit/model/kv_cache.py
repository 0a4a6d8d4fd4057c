"""A key/value cache for incremental decoding: each attention call of a forward pass keeps the
keys and values of the tokens seen so far, so the next token costs one position, not the
whole prefix.

The cache is passed to `Transformer.hidden(ids, cache)`; attention modules reach it through
`ForwardContext.remember(k, v)`, which is the identity when no cache is given, so training
and scoring never pay for it. Entries are per attention *call*, in call order, not per module:
a block shared by several layers (`model.sharing`) keeps one entry per layer that runs it.

    cache = KVCache()
    logits = model.head(model.hidden(prompt, cache))[:, -1]     # prefill: T tokens
    logits = model.head(model.hidden(next_token, cache))[:, -1]  # then one at a time

Scoring shares one cached context among several continuations (`KVCache.share`, used by
`ArchauditLM.context_cache`): the context once, then every continuation as a row of one pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class KVCache:
    keys: list[torch.Tensor] = field(default_factory=list)
    """Per attention call: (B, h_kv, length, d) keys after RoPE."""
    values: list[torch.Tensor] = field(default_factory=list)
    length: int = 0
    """Tokens cached: the next forward's first token sits at this position."""
    _calls: int = 0
    _rows: list[int] | None = None
    """Set by `share` until the next pass: how many rows continue each cached row."""

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """This call's new keys and values (B, h, T, d) → every key and value so far."""
        call, self._calls = self._calls, self._calls + 1
        if call == len(self.keys):
            self.keys.append(k)
            self.values.append(v)
        else:
            self.keys[call] = _joined(self.keys[call], k, self._rows)
            self.values[call] = _joined(self.values[call], v, self._rows)
        return self.keys[call], self.values[call]

    def share(self, rows: torch.Tensor) -> None:
        """Let `rows[g]` rows of the next pass continue cached row g (a context shared by
        several continuations): each sees its row's keys and values. The cached rows are not
        repeated here but broadcast into the next pass's keys and values, one copy in all."""
        self._rows = [int(r) for r in rows]

    def advance(self, tokens: int) -> None:
        """Close one forward pass of `tokens` new tokens."""
        if self._calls != len(self.keys):
            raise RuntimeError(  # an attention module that does not call `remember`
                f"the KV cache saw {self._calls} attention calls, expected {len(self.keys)}"
            )
        self.length += tokens
        self._calls = 0
        self._rows = None


def _joined(cached: torch.Tensor, new: torch.Tensor, rows: list[int] | None) -> torch.Tensor:
    """Cached (G, h, S, d) and new (B, h, T, d) keys or values → (B, h, S + T, d); with `rows`,
    cached row g is broadcast to the next `rows[g]` rows (B = sum(rows))."""
    if rows is None:
        return torch.cat((cached, new), dim=-2)
    out = new.new_empty(new.shape[0], new.shape[1], cached.shape[-2] + new.shape[-2], new.shape[-1])
    out[..., cached.shape[-2] :, :] = new
    start = 0
    for g, n in enumerate(rows):
        out[start : start + n, :, : cached.shape[-2]] = cached[g]
        start += n
    return out
