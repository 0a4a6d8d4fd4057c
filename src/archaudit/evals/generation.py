"""Greedy decoding for generation tasks (key-value retrieval), through `ScoringModel.logits_at`.

No KV cache here: a scoring model exposes only `logits_at`, so each new token costs a forward
pass over the prompt so far. Retrieval answers are short (a uuid is ~20-40 tokens); models with
a cache generate faster through `archaudit.diagnose` (`ModelView.next_logits`).
"""

from __future__ import annotations

import torch

from archaudit.evals.scoring import ScoringModel


@torch.no_grad()
def greedy_text(
    model: ScoringModel, prompt: list[int], *, max_new_tokens: int, stop: str = "\n"
) -> str:
    """The greedy continuation of `prompt` (token ids), at most `max_new_tokens` tokens, cut
    at the first `stop` (the answer's line end), decoded."""
    limit = model.position_limit or len(prompt) + max_new_tokens
    ids = list(prompt)
    new: list[int] = []
    for _ in range(max_new_tokens):
        window = torch.tensor([ids[-limit:]], device=model.device)
        last = torch.tensor([[window.shape[1] - 1]], device=model.device)
        new.append(int(model.logits_at(window, last)[0, 0].argmax()))
        ids.append(new[-1])
        if stop and stop in model.decode(new).lstrip():
            break
    answer = model.decode(new).lstrip()
    return answer.split(stop, 1)[0] if stop else answer
