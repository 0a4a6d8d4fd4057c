"""The embedded default corpus: a synthetic language that needs no file and no network.

It is generated, deterministically from a seed, so that architecture choices matter:
- a probabilistic grammar whose verbs agree in number with their subject across prepositional
  phrases and relative clauses (long-distance agreement with attractor nouns of the other number);
- in-context segments that no fixed n-gram statistics can predict: associative recall, noisy
  recall, selective copying, induction, and needle retrieval in a grammar haystack (`probes.py`).
A model can lower its loss on the grammar with local statistics alone, but the agreement and
in-context parts reward attention that routes information over distance.
"""

from __future__ import annotations

import random

from archaudit.data.probes import PROBES, needle

# Bump when the generator's output changes: it keys the token cache. 2: probe keys no longer
# follow set order, which made version 1's text depend on each process's PYTHONHASHSEED.
VERSION = 2

NOUNS = [
    "blick",
    "dax",
    "wug",
    "fep",
    "toma",
    "zup",
    "kiki",
    "lorp",
    "mip",
    "grob",
    "nerl",
    "tib",
    "vash",
    "yom",
    "quib",
    "prat",
]
INTRANSITIVE = ["glorp", "snib", "tweel", "frab", "mosk", "plim", "derv", "swon"]
TRANSITIVE = ["meck", "zarn", "bliv", "crunt", "hame", "sulp", "wevv", "tolk"]
ADJECTIVES = ["red", "tiny", "loud", "green", "old", "soft", "brave", "odd"]
PREPOSITIONS = ["near", "under", "behind", "with", "beside"]
DETERMINERS = {False: ["the", "a", "this", "every"], True: ["the", "some", "these", "many"]}


def noun_phrase(rng: random.Random, plural: bool, depth: int) -> str:
    words = [rng.choice(DETERMINERS[plural])]
    words += rng.sample(ADJECTIVES, k=rng.choice([0, 0, 1, 2]))
    words.append(rng.choice(NOUNS) + ("s" if plural else ""))
    if depth > 0:
        roll = rng.random()
        if roll < 0.25:  # prepositional phrase with its own noun: an agreement attractor
            words += [rng.choice(PREPOSITIONS), noun_phrase(rng, rng.random() < 0.5, depth - 1)]
        elif roll < 0.4:  # object relative clause: "that the daxes meck"
            inner = rng.random() < 0.5
            words += ["that", noun_phrase(rng, inner, depth - 1), verb(rng, TRANSITIVE, inner)]
    return " ".join(words)


def verb(rng: random.Random, verbs: list[str], plural: bool) -> str:
    """Singular subjects take -s: "the blick glorps", "the blicks glorp"."""
    return rng.choice(verbs) + ("" if plural else "s")


def sentence(rng: random.Random) -> str:
    plural = rng.random() < 0.5
    subject = noun_phrase(rng, plural, depth=2)
    if rng.random() < 0.5:
        predicate = verb(rng, INTRANSITIVE, plural)
    else:
        predicate = f"{verb(rng, TRANSITIVE, plural)} {noun_phrase(rng, rng.random() < 0.5, 1)}"
    return f"{subject} {predicate}."


def agreement_pair(rng: random.Random) -> tuple[str, str]:
    """A grammatical sentence and the same sentence with its main verb in the wrong number.
    Between subject and verb sits a phrase or clause whose noun has the other number (an
    attractor), so only a model that tracks the subject across it prefers the good one.
    Sentences stay short (< 50 characters) to fit tiny contexts."""
    plural = rng.random() < 0.5

    def bare(number: bool) -> str:
        return f"{rng.choice(DETERMINERS[number])} {rng.choice(NOUNS)}{'s' if number else ''}"

    if rng.random() < 0.5:
        middle = f"{rng.choice(PREPOSITIONS)} {bare(not plural)}"
    else:
        middle = f"that {bare(not plural)} {verb(rng, TRANSITIVE, not plural)}"
    stem = rng.choice(INTRANSITIVE)
    good, bad = (stem, stem + "s") if plural else (stem + "s", stem)
    subject = f"{bare(plural)} {middle}"
    return f"{subject} {good}.", f"{subject} {bad}."


def paragraph(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        out.append(sentence(rng))
        size += len(out[-1]) + 1
    return " ".join(out)


# Shares of the corpus by document kind; the grammar dominates as natural text would.
MIX = {
    "grammar": 0.55,
    "associative_recall": 0.12,
    "noisy_recall": 0.08,
    "selective_copy": 0.08,
    "induction": 0.10,
    "needle": 0.07,
}


def document(rng: random.Random) -> str:
    kind = rng.choices(list(MIX), weights=list(MIX.values()))[0]
    if kind == "grammar":
        return paragraph(rng, rng.randint(100, 400))
    if kind == "needle":
        probe = needle(rng, paragraph(rng, rng.randint(40, 200)), rng.random())
    else:
        probe = PROBES.get(kind)(rng)
    return probe.prompt + probe.answer


def generate(chars: int, seed: int = 0) -> str:
    """About `chars` characters of the synthetic language, one document per line."""
    rng = random.Random(seed)
    docs: list[str] = []
    size = 0
    while size < chars:
        docs.append(document(rng))
        size += len(docs[-1]) + 1
    return "\n".join(docs) + "\n"
