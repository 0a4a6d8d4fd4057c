"""The retrieval stream (`data.retrieval`): every question answers a fact stated within reach
before it, in the needle task's own sentences, and the text depends on the seed alone."""

from __future__ import annotations

import random
import re

from archaudit.data.probes import needle
from archaudit.data.retrieval import StreamShape, fact, question, retrieval_corpus, stream_line

QUESTION = re.compile(r"\? key (\w\w) is (\d)")


def test_the_stream_is_deterministic_and_keyed_by_its_seed():
    assert retrieval_corpus(3000, seed=1) == retrieval_corpus(3000, seed=1)
    assert retrieval_corpus(3000, seed=1) != retrieval_corpus(3000, seed=2)
    text = retrieval_corpus(3000, seed=1)
    assert len(text) >= 3000 and text.endswith("\n")


def test_every_question_answers_a_fact_stated_within_reach():
    shape = StreamShape(reach=48)
    rng = random.Random(0)
    asked = 0
    for _ in range(200):
        line = stream_line(rng, shape)
        for found in QUESTION.finditer(line):
            key, value = found.groups()
            stated = line.rfind(fact(key, value), 0, found.start())
            assert stated >= 0, f"question {found.group()} with no fact before it"
            end = stated + len(fact(key, value))
            assert found.start() - end <= shape.reach + 1  # the joining space
            asked += 1
    assert asked > 200  # questions are common, not a rarity


def test_keys_are_not_restated_within_a_line():
    rng = random.Random(3)
    for _ in range(100):
        keys = re.findall(r"(?<!\? )key (\w\w) is \d\.", stream_line(rng))
        assert "  key" in stream_line(rng)  # spaced as the needle task spaces a fact
        assert len(keys) == len(set(keys))


def test_its_sentences_are_the_needle_tasks():
    """The eval's needle prompt holds the same fact and question a model learned here."""
    probe = needle(random.Random(5), "the dax glorps. a wug snibs.", depth=1.0)
    found = QUESTION.search(probe.prompt + probe.answer)
    assert found is not None
    key, value = found.groups()
    assert value == probe.answer and f". {fact(key, value)} " in probe.prompt
    assert (probe.prompt + probe.answer).endswith(question(key, value))


def test_a_farther_reach_asks_farther_back():
    def distances(reach: int) -> list[int]:
        rng, out = random.Random(9), []
        for _ in range(200):
            line = stream_line(rng, StreamShape(reach=reach))
            for found in QUESTION.finditer(line):
                key, value = found.groups()
                out.append(found.start() - line.rfind(fact(key, value), 0, found.start()))
        return out

    assert max(distances(24)) < max(distances(96))
