"""Test-time scaling curves on the generated reasoning task (When Fewer Layers Break More Chains,
arXiv 2510.22228): accuracy as more compute is spent at inference.

- best-of-N: N samples at temperature τ, correct when any is (an oracle verifier), estimated
  without bias from n ≥ N samples as pass@N = 1 − C(n−c, N)/C(n, N) (Chen et al. 2021);
- majority vote: the most frequent parsed answer of the first N samples (ties: the earliest);
- budget: greedy decoding cut after B scratchpad tokens, then the answer forced by appending the
  answer marker ("budget forcing", Muennighoff et al. 2025, s1).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from archaudit.diagnose.access import ModelView
from archaudit.diagnose.reasoning import ANSWER, END, ReasoningItem, parse_answer
from archaudit.progress import progress
from archaudit.stats.records.serialize import JsonResult

ANSWER_TOKENS = 4
"""Tokens generated after a forced answer marker: room for the answer and the line end."""


@torch.no_grad()
def generate(
    view: ModelView,
    prompt: Sequence[int],
    *,
    n: int,
    max_new: int,
    temperature: float,
    generator: torch.Generator | None = None,
) -> list[str]:
    """`n` continuations of `prompt` (token ids), each at most `max_new` tokens, decoded; rows
    stop at the end of the line. Temperature 0 is greedy. The view's KV cache, where it has one
    (`ModelView.next_logits`), carries the prompt from step to step."""
    ids = torch.tensor([list(prompt)] * n, dtype=torch.long)
    start = ids.shape[1]
    texts = [""] * n
    cache = None
    for _ in range(max_new):
        logits, cache = view.next_logits(ids, cache)
        logits = logits.cpu()  # (n, V)
        if temperature == 0:
            nxt = logits.argmax(-1, keepdim=True)
        else:
            probs = torch.softmax(logits / temperature, dim=-1)
            nxt = torch.multinomial(probs, 1, generator=generator)
        ids = torch.cat((ids, nxt), dim=1)
        texts = [view.decode(row[start:].tolist()) for row in ids]
        if all(END in text for text in texts):
            break
    return [text.split(END, 1)[0] + (END if END in text else "") for text in texts]


def pass_at(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct (Chen et al. 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def majority(answers: Sequence[str | None]) -> str | None:
    """The most frequent answer; ties go to the one seen first; None when nothing parsed."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None
    best = max(counts.values())
    return next(a for a in answers if a is not None and counts[a] == best)


def forced_answer(view: ModelView, prompt: Sequence[int], scratch: str) -> str | None:
    """Append the answer marker after the scratchpad text and read the greedy answer."""
    body = scratch.split(ANSWER, 1)[0]
    ids = list(prompt) + view.encode(body + ANSWER)
    tail = generate(view, ids, n=1, max_new=ANSWER_TOKENS, temperature=0.0)[0]
    return parse_answer(ANSWER + tail)


@dataclass(frozen=True)
class TTSCurves(JsonResult):
    model: str
    items: int
    temperature: float
    samples: int
    ns: list[int]
    best_of_n: list[float]
    """Accuracy with an oracle verifier over N samples (pass@N)."""
    majority_vote: list[float]
    budgets: list[int]
    budget_accuracy: list[float]
    """Greedy accuracy when the scratchpad is cut after B tokens and the answer forced."""


def tts_curves(
    view: ModelView,
    items: Sequence[ReasoningItem],
    *,
    ns: Sequence[int] = (1, 2, 4, 8, 16),
    budgets: Sequence[int] | None = None,
    temperature: float = 1.0,
    seed: int = 0,
) -> TTSCurves:
    """Best-of-N, majority vote and budget curves of `view` on `items`."""
    n_max = max(ns)
    longest = max(len(view.encode(item.completion)) for item in items)
    if budgets is None:
        budgets = sorted({0, *range(1, longest, max(1, longest // 6)), longest})
    best = [0.0] * len(ns)
    vote = [0.0] * len(ns)
    budget_hits = [0.0] * len(budgets)
    with progress("test-time scaling", len(items)) as bar:
        for index, item in enumerate(items):
            prompt = view.encode(END + item.prompt)
            generator = torch.Generator().manual_seed(seed * 1_000_003 + index)
            texts = generate(
                view,
                prompt,
                n=n_max,
                max_new=longest + 1,
                temperature=temperature,
                generator=generator,
            )
            answers = [parse_answer(t) for t in texts]
            correct = [a == item.answer for a in answers]
            for j, n in enumerate(ns):
                best[j] += pass_at(n_max, sum(correct), n)
                vote[j] += majority(answers[:n]) == item.answer
            greedy = generate(view, prompt, n=1, max_new=longest + 1, temperature=0.0)[0]
            greedy_ids = view.encode(greedy)
            for j, budget in enumerate(budgets):
                cut = view.decode(greedy_ids[:budget])
                answer = parse_answer(cut) if cut.endswith(END) else None
                if answer is None:
                    answer = forced_answer(view, prompt, cut)
                budget_hits[j] += answer == item.answer
            bar.update(advance=1)
    n_items = len(items)
    return TTSCurves(
        model=view.name,
        items=n_items,
        temperature=temperature,
        samples=n_max,
        ns=list(ns),
        best_of_n=[b / n_items for b in best],
        majority_vote=[v / n_items for v in vote],
        budgets=list(budgets),
        budget_accuracy=[h / n_items for h in budget_hits],
    )
