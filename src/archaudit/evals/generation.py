"""Greedy decoding for generation tasks (key-value retrieval).

A model that offers an incremental `decoder()` (archaudit's own, through a KV cache in
`model/kv_cache.py`) feeds the prompt once and then one token per step; any other
`ScoringModel` recomputes the prefix through `logits_at` at every step. Both give the same
tokens (tests/evals/test_eval_kv_cache.py); benchmarks/kv_cache.py measures the speed-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch

from archaudit.evals.scoring import ScoringModel

Decoder = Callable[[Sequence[int]], torch.Tensor]
"""Token ids in, the next-token logits (V,) after the last of them out; keeps its own state."""


@torch.no_grad()
def greedy_text(
    model: ScoringModel,
    prompt: list[int],
    *,
    max_new_tokens: int,
    stop: str = "\n",
    cache: bool = True,
) -> str:
    """The greedy continuation of `prompt` (token ids), at most `max_new_tokens` tokens, cut
    at the first `stop` (the answer's line end), decoded. `cache=False` forces the uncached
    path (to compare the two)."""
    tokens = greedy_tokens(model, prompt, cache=cache)
    new: list[int] = []
    for _ in range(max_new_tokens):
        new.append(next(tokens))
        if stop and stop in model.decode(new).lstrip():
            break
    answer = model.decode(new).lstrip()
    return answer.split(stop, 1)[0] if stop else answer


def greedy_tokens(model: ScoringModel, prompt: list[int], *, cache: bool = True) -> Iterator[int]:
    """The greedy tokens after `prompt`, one per `next`: through the model's decoder when it
    has one (and the model runs any length: a sliding window of learned positions cannot be
    cached), else by recomputing the prefix."""
    make = getattr(model, "decoder", None)
    decoder = make() if cache and make is not None and model.position_limit is None else None
    return _cached(decoder, prompt) if decoder is not None else _uncached(model, prompt)


def _cached(decoder: Decoder, prompt: list[int]) -> Iterator[int]:
    logits = decoder(prompt)
    while True:
        token = int(logits.argmax())
        yield token
        logits = decoder([token])


def _uncached(model: ScoringModel, prompt: list[int]) -> Iterator[int]:
    ids = list(prompt)
    while True:
        window = torch.tensor([ids[-model.position_limit :] if model.position_limit else ids])
        window = window.to(model.device)
        last = torch.tensor([[window.shape[1] - 1]], device=model.device)
        ids.append(int(model.logits_at(window, last)[0, 0].argmax()))
        yield ids[-1]
