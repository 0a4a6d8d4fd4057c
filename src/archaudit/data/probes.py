"""Seeded in-context probes as text: (prompt, answer) pairs.

The embedded training corpus (`synthetic.py`) contains complete examples of every format, so a
model trained on it can learn them in context; evaluation (`archaudit.evals`) scores the answer
given the prompt. Every generator takes a `random.Random` and is deterministic given its state and
nothing else: no set or dict order of strings (PYTHONHASHSEED), clock or thread count.
Formats are short and byte-level friendly: keys are two letters, values one digit or letter.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from archaudit.registry import Registry

LETTERS = string.ascii_lowercase
DIGITS = string.digits


@dataclass(frozen=True)
class Probe:
    prompt: str
    answer: str


PROBES: Registry[Callable[[random.Random], Probe]] = Registry("probe")


def _keys(rng: random.Random, n: int) -> list[str]:
    """n distinct two-letter keys in the order drawn. A list, never a set: a set of strings
    iterates in an order that changes with each process's PYTHONHASHSEED."""
    keys: list[str] = []
    while len(keys) < n:
        key = rng.choice(LETTERS) + rng.choice(LETTERS)
        if key not in keys:
            keys.append(key)
    return keys


@PROBES.register("associative_recall")
def associative_recall(rng: random.Random, n_pairs: int = 8, n_queries: int = 3) -> Probe:
    """Multi-query associative recall (Arora et al. 2023, Zoology): "kv: ab=3 cd=7 ? cd=7 ab=3".
    Earlier queries are answered in the prompt; the last one is asked."""
    keys = _keys(rng, n_pairs)
    values = {k: rng.choice(DIGITS) for k in keys}
    pairs = " ".join(f"{k}={values[k]}" for k in keys)
    asked = rng.sample(keys, min(n_queries, n_pairs))
    answered = " ".join(f"{k}={values[k]}" for k in asked[:-1])
    prompt = f"kv: {pairs} ? {answered + ' ' if answered else ''}{asked[-1]}="
    return Probe(prompt, values[asked[-1]])


@PROBES.register("noisy_recall")
def noisy_recall(rng: random.Random, n_pairs: int = 6, noise: int = 2) -> Probe:
    """Associative recall with distractor tokens between the pairs ("~" runs and stray letters)."""
    keys = _keys(rng, n_pairs)
    values = {k: rng.choice(DIGITS) for k in keys}
    parts = []
    for k in keys:
        parts.append(f"{k}={values[k]}")
        parts.extend(rng.choice(LETTERS) + "~" for _ in range(rng.randint(0, noise)))
    key = rng.choice(keys)
    return Probe(f"nkv: {' '.join(parts)} ? {key}=", values[key])


@PROBES.register("selective_copy")
def selective_copy(rng: random.Random, n_tokens: int = 5, length: int = 14) -> Probe:
    """Copy the letters of a sequence in order, skipping the "." fillers (Gu & Dao 2023)."""
    cells = ["."] * length
    positions = sorted(rng.sample(range(length), n_tokens))
    letters = [rng.choice(LETTERS) for _ in positions]
    for pos, letter in zip(positions, letters, strict=True):
        cells[pos] = letter
    return Probe(f"sel: {''.join(cells)} | ", "".join(letters))


@PROBES.register("induction")
def induction(rng: random.Random, length: int = 12) -> Probe:
    """Induction on random tokens: after "... a b ... a", predict "b" (Olsson et al. 2022).
    A random letter string is shown, then repeated up to a random point."""
    seq = "".join(rng.choice(LETTERS) for _ in range(length))
    cut = rng.randint(2, length - 1)
    return Probe(f"ind: {seq} {seq[:cut]}", seq[cut])


def needle(rng: random.Random, haystack: str, depth: float) -> Probe:
    """Key-value retrieval in a long context: one "key xy is 7." sentence placed at relative
    `depth` of `haystack` (0 = start, 1 = end), then asked for."""
    key = rng.choice(LETTERS) + rng.choice(LETTERS)
    value = rng.choice(DIGITS)
    fact = f" key {key} is {value}. "
    cut = int(depth * len(haystack))
    # Place the fact between sentences so that the grammar around it stays intact.
    boundary = haystack.rfind(". ", 0, cut)
    cut = boundary + 2 if boundary >= 0 else 0
    return Probe(f"{haystack[:cut]}{fact}{haystack[cut:]} ? key {key} is ", value)
