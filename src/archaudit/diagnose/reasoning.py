"""A generated multi-step reasoning task: chained modular addition with a scratchpad.

    prompt      "3+4+2+5:"
    completion  "7,9,4=4\n"     running sums mod 10, then the answer

Each step needs the previous partial sum and the next term, so answering without the scratchpad
is hard and a longer generation budget helps: the shape test-time scaling is measured on (When
Fewer Layers Break More Chains, arXiv 2510.22228). Items come from `random.Random(seed)` only,
so the same seed gives the same bytes whatever PYTHONHASHSEED or the platform.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from archaudit.errors import ConfigError

ANSWER, END = "=", "\n"


@dataclass(frozen=True)
class ReasoningItem:
    prompt: str
    completion: str
    answer: str

    @property
    def text(self) -> str:
        return self.prompt + self.completion


def reasoning_item(rng: random.Random, terms: int = 4, modulus: int = 10) -> ReasoningItem:
    if terms < 2 or modulus < 2:
        raise ConfigError(
            f"the reasoning task needs terms >= 2 and modulus >= 2 (got {terms}, {modulus})"
        )
    values = [rng.randrange(modulus) for _ in range(terms)]
    sums, total = [], values[0]
    for value in values[1:]:
        total = (total + value) % modulus
        sums.append(str(total))
    answer = sums[-1]
    prompt = "+".join(map(str, values)) + ":"
    return ReasoningItem(prompt, ",".join(sums) + ANSWER + answer + END, answer)


def reasoning_items(
    n: int, *, seed: int = 0, terms: int = 4, modulus: int = 10
) -> list[ReasoningItem]:
    rng = random.Random(f"reasoning:{seed}")
    return [reasoning_item(rng, terms, modulus) for _ in range(n)]


def reasoning_corpus(chars: int, *, seed: int = 0, terms: int = 4, modulus: int = 10) -> str:
    """Training text: solved items, one per line, at least `chars` characters."""
    rng = random.Random(f"reasoning-corpus:{seed}")
    lines: list[str] = []
    size = 0
    while size < chars:
        line = reasoning_item(rng, terms, modulus).text
        lines.append(line)
        size += len(line)
    return "".join(lines)


def parse_answer(completion: str) -> str | None:
    """The text between the answer marker and the end of the line, or None if there is none."""
    _, marker, tail = completion.partition(ANSWER)
    if not marker:
        return None
    return tail.split(END, 1)[0].strip()
