"""Issue 44: the token cache proves itself before a run trains on it. A zeroed or truncated
tokens.bin, a garbage or lying meta.json, or a FIFO in their place is rebuilt with one line,
and the corpus read back equals the honest one."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from archaudit.config import Recipe
from archaudit.data.corpus import prepare_corpus

RECIPE = Recipe(corpus_chars=20_000)


def zero_tokens(folder: Path) -> None:
    tokens = folder / "tokens.bin"
    tokens.write_bytes(bytes(tokens.stat().st_size))  # right size, wrong data


def truncate_tokens(folder: Path) -> None:
    tokens = folder / "tokens.bin"
    tokens.write_bytes(tokens.read_bytes()[:100])


def garbage_meta(folder: Path) -> None:
    (folder / "meta.json").write_text("{not json")


def lying_meta(folder: Path) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "n_tokens": meta["n_tokens"] + 7}))


def fifo_meta(folder: Path) -> None:
    (folder / "meta.json").unlink()
    os.mkfifo(folder / "meta.json")


def odd_fields(folder: Path) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "n_val": "x", "dtype": "float64"}))


@pytest.mark.parametrize(
    "tamper", [zero_tokens, truncate_tokens, garbage_meta, lying_meta, fifo_meta, odd_fields]
)
def test_a_tampered_token_cache_is_rebuilt_and_reads_back_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tamper: Callable[[Path], None]
) -> None:
    first = prepare_corpus(RECIPE, cache=tmp_path)
    train, val = np.array(first.train), np.array(first.val)  # copies: the memmap sees tampering
    (folder,) = (tmp_path / "tokens").iterdir()
    tamper(folder)
    capsys.readouterr()
    again = prepare_corpus(RECIPE, cache=tmp_path)
    assert np.array_equal(again.train, train) and np.array_equal(again.val, val)
    assert "rebuilt" in capsys.readouterr().err


def test_an_honest_cache_is_read_silently(tmp_path: Path, capsys) -> None:
    prepare_corpus(RECIPE, cache=tmp_path)
    capsys.readouterr()
    prepare_corpus(RECIPE, cache=tmp_path)
    assert capsys.readouterr().err == ""


def test_a_cache_that_cannot_be_written_keeps_the_tokens_in_memory(tmp_path: Path, capsys) -> None:
    """A file where the cache folder belongs (as a read-only or full one): the run tokenizes,
    says so once, and trains on the tokens a writable cache would hold (it was an exit 2)."""
    honest = prepare_corpus(RECIPE, cache=tmp_path / "ok")
    blocked = tmp_path / "blocked"
    blocked.write_text("in the way")
    capsys.readouterr()
    corpus = prepare_corpus(RECIPE, cache=blocked)
    assert np.array_equal(corpus.train, honest.train) and np.array_equal(corpus.val, honest.val)
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "cannot be" in x]
    assert str(blocked) in line and blocked.read_text() == "in the way"


BPE = Recipe(corpus_chars=20_000, tokenizer="bpe:300")


def damage_tokenizer(folder: Path) -> None:
    """A learned tokenizer whose merges were edited: it would split the corpus another way."""
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text())
    data["model"]["merges"] = data["model"]["merges"][:10]
    path.write_text(json.dumps(data))


def drop_tokenizer(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()


@pytest.mark.parametrize("tamper", [damage_tokenizer, drop_tokenizer])
def test_a_tampered_learned_tokenizer_is_relearned_not_believed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tamper: Callable[[Path], None]
) -> None:
    """The meta records the learned tokenizer's SHA-256 too: an edited or missing tokenizer.json
    rebuilds the entry (the tokenizer learned again, the same), never tokenises with it."""
    first = prepare_corpus(BPE, cache=tmp_path)
    train, vocab = np.array(first.train), first.tokenizer.vocab_size
    (folder,) = (tmp_path / "tokens").iterdir()
    tamper(folder)
    capsys.readouterr()
    again = prepare_corpus(BPE, cache=tmp_path)
    assert np.array_equal(again.train, train) and again.tokenizer.vocab_size == vocab
    assert "rebuilt" in capsys.readouterr().err
