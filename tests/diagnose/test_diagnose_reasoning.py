"""The generated reasoning task: correct, deterministic, independent of PYTHONHASHSEED."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from archaudit.diagnose import reasoning
from archaudit.diagnose.reasoning import parse_answer, reasoning_corpus, reasoning_items

# The module is loaded from its file so the subprocess skips torch (archaudit.diagnose's package).
SCRIPT = (
    "import hashlib, importlib.util, sys;"
    "spec = importlib.util.spec_from_file_location('reasoning', sys.argv[1]);"
    "m = sys.modules['reasoning'] = importlib.util.module_from_spec(spec);"
    "spec.loader.exec_module(m);"
    "reasoning_items, reasoning_corpus = m.reasoning_items, m.reasoning_corpus;"
    "items = reasoning_items(200, seed=3);"
    "text = ''.join(i.text for i in items) + reasoning_corpus(5000, seed=3);"
    "print(hashlib.sha256(text.encode()).hexdigest())"
)


def test_items_are_solved_correctly() -> None:
    for item in reasoning_items(50, seed=1, terms=5):
        values = [int(v) for v in item.prompt.rstrip(":").split("+")]
        assert len(values) == 5
        assert item.answer == str(sum(values) % 10)
        sums = item.completion.split("=")[0].split(",")
        assert sums == [str(sum(values[: i + 1]) % 10) for i in range(1, 5)]
        assert parse_answer(item.completion) == item.answer


def test_seeds_differ_and_repeat() -> None:
    assert reasoning_items(20, seed=0) == reasoning_items(20, seed=0)
    assert reasoning_items(20, seed=0) != reasoning_items(20, seed=1)
    corpus = reasoning_corpus(1000, seed=0)
    assert len(corpus) >= 1000 and corpus.endswith("\n")


def test_same_bytes_under_three_hash_seeds() -> None:
    digests = set()
    for hash_seed in ("0", "1", "random"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT, reasoning.__file__],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(out.stdout.strip())
    assert len(digests) == 1
    text = "".join(i.text for i in reasoning_items(200, seed=3)) + reasoning_corpus(5000, seed=3)
    assert digests == {hashlib.sha256(text.encode()).hexdigest()}


def test_parse_answer() -> None:
    assert parse_answer("7,9,4=4\n") == "4"
    assert parse_answer("7,9") is None
    assert parse_answer("=12") == "12"
