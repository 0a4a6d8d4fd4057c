"""A training stream dense in key-value retrieval: facts stated in grammar text, asked later.

The embedded corpus (`synthetic.py`) holds needle documents of 40-200 characters, longer than a
tiny model's context, so a training window rarely sees a fact and its question together and a
small model does not learn to retrieve in a few hundred steps (OlmPool's pilots, docs/
replications.md). Here every line interleaves grammar sentences with facts (" key xy is 7.",
the needle task's sentence) and questions about facts stated a few to `reach` characters before
("? key xy is 7"), spaced as the needle task spaces them, so that any window of a few dozen
characters holds retrievals at distances short and long: the supervision induction heads form from.

Deterministic from the seed alone: no set or dict order of strings, clock or thread count.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from archaudit.data.probes import DIGITS, LETTERS
from archaudit.data.synthetic import sentence

VERSION = 2
"""Bump when the output changes (the text's bytes are the runs' corpus identity). 2: a fact
is spaced as the needle task spaces it (two spaces before "key")."""


@dataclass(frozen=True)
class StreamShape:
    """The stream's proportions: what follows what, and how far back a question reaches."""

    line_chars: tuple[int, int] = (200, 600)
    """Each line's length in characters, drawn uniformly (one document a line)."""
    fact: float = 0.45
    """Chance that the next segment states a new fact (else a sentence, or a question)."""
    question: float = 0.45
    """Chance that it asks about a fact stated within `reach` characters (when there is one)."""
    reach: int = 48
    """The farthest back, in characters, a question's fact may end: with the fact and the
    question's own length, every answer lies under 64 characters back (a context of 64)."""


def fact(key: str, value: str) -> str:
    """The needle task's sentence (`data.probes.needle`) with its leading space: joined to the
    sentence before by one more, as the needle task inserts it after a sentence's ". "."""
    return f" key {key} is {value}."


def question(key: str, value: str) -> str:
    """The needle task's question, answered: "? key xy is 7"."""
    return f"? key {key} is {value}"


def stream_line(rng: random.Random, shape: StreamShape = StreamShape()) -> str:
    """One line: segments joined by spaces until the drawn length is reached."""
    target = rng.randint(*shape.line_chars)
    segments: list[str] = []
    stated: list[tuple[int, str, str]] = []  # (end offset, key, value), in order stated
    size = 0
    while size < target:
        recent = [(k, v) for end, k, v in stated if size - end <= shape.reach]
        roll = rng.random()
        if roll < shape.question and recent:
            segment = question(*rng.choice(recent))
        elif roll < shape.question + shape.fact:
            key = _fresh_key(rng, [k for _, k, _ in stated])
            value = rng.choice(DIGITS)
            segment = fact(key, value)
            stated.append((size + len(segment) + 1, key, value))
        else:
            segment = sentence(rng)
        segments.append(segment)
        size += len(segment) + 1
    return " ".join(segments)


def _fresh_key(rng: random.Random, used: list[str]) -> str:
    """A two-letter key not yet stated in this line (a list, never a set: see probes._keys)."""
    while True:
        key = rng.choice(LETTERS) + rng.choice(LETTERS)
        if key not in used:
            return key


def retrieval_corpus(chars: int, *, seed: int = 0, shape: StreamShape = StreamShape()) -> str:
    """At least `chars` characters of the stream, one line per document."""
    rng = random.Random(f"retrieval-corpus:v{VERSION}:{seed}")
    lines: list[str] = []
    size = 0
    while size < chars:
        lines.append(stream_line(rng, shape))
        size += len(lines[-1]) + 1
    return "\n".join(lines) + "\n"
