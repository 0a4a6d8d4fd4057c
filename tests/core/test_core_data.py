import json
import random

import numpy as np
import pytest

from archaudit.config import Recipe
from archaudit.data import probes, synthetic
from archaudit.data.corpus import prepare_corpus, read_text
from archaudit.data.sampler import BatchSampler
from archaudit.data.tokenizers import ByteTokenizer, load_tokenizer
from archaudit.errors import DataError


def test_byte_tokenizer_round_trips_unicode():
    tok = ByteTokenizer()
    text = "naïve café — ünïcödé"
    assert tok.decode(tok.encode(text)) == text
    assert max(tok.encode(text)) < 256


def test_synthetic_corpus_is_deterministic_and_mixes_formats():
    a = synthetic.generate(50_000, seed=3)
    assert a == synthetic.generate(50_000, seed=3)
    assert a != synthetic.generate(50_000, seed=4)
    for marker in ("kv: ", "nkv: ", "sel: ", "ind: ", " key "):
        assert marker in a


def test_synthetic_grammar_agrees_subject_and_verb():
    rng = random.Random(0)
    for _ in range(200):
        plural = rng.random() < 0.5
        np_text = synthetic.noun_phrase(rng, plural, depth=0)
        assert np_text.split()[-1].endswith("s") == plural


def test_probes_are_seeded_and_answerable():
    for name in probes.PROBES:
        p1 = probes.PROBES.get(name)(random.Random(7))
        p2 = probes.PROBES.get(name)(random.Random(7))
        assert p1 == p2 and p1.answer
    recall = probes.associative_recall(random.Random(1))
    key = recall.prompt.rsplit(" ", 1)[-1].rstrip("=")
    assert f"{key}={recall.answer}" in recall.prompt
    ind = probes.induction(random.Random(2))
    seq, prefix = ind.prompt.split()[1:]
    assert seq[len(prefix)] == ind.answer


def test_sampler_is_keyed_by_step_and_splits_ranks():
    tokens = np.arange(10_000, dtype=np.uint16)
    sampler = BatchSampler(tokens, seq_len=16, seed=5)
    x, y = sampler.batch((3, 0), 8)
    x2, _ = sampler.batch((3, 0), 8)
    assert np.array_equal(x, x2) and np.array_equal(y[:, :-1], x[:, 1:])
    halves = [sampler.batch((3, 0), 8, rank=r, world=2)[0] for r in (0, 1)]
    assert np.array_equal(np.concatenate(halves), x)
    assert not np.array_equal(sampler.batch((4, 0), 8)[0], x)


def test_corpus_is_cached_by_content(tmp_path):
    text = tmp_path / "c.txt"
    text.write_text("hello world\n" * 200)
    recipe = Recipe(corpus=str(text), val_fraction=0.1)
    first = prepare_corpus(recipe, cache=tmp_path / "cache")
    assert len(first.train) + len(first.val) == 2400 and first.bytes_per_token == 1.0
    again = prepare_corpus(recipe, cache=tmp_path / "cache")
    assert again.key == first.key
    text.write_text("changed text\n" * 200)
    assert prepare_corpus(recipe, cache=tmp_path / "cache").key != first.key


def test_a_cached_synthetic_corpus_is_not_generated_again(tmp_path, monkeypatch):
    """Every run process prepares its corpus: the synthetic language's cache key needs no text,
    so a cached one is read back without generating it (0.5 s per run)."""
    from archaudit.data import synthetic

    recipe = Recipe(corpus_chars=20_000)
    first = prepare_corpus(recipe, cache=tmp_path)
    monkeypatch.setattr(synthetic, "generate", lambda *a: pytest.fail("generated again"))
    again = prepare_corpus(recipe, cache=tmp_path)
    assert again.key == first.key and np.array_equal(again.train, first.train)
    with pytest.raises(pytest.fail.Exception, match="generated again"):
        prepare_corpus(Recipe(corpus_chars=20_001), cache=tmp_path)


def test_jsonl_corpus_errors_name_the_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"text": "ok"}) + "\n{bad json\n")
    with pytest.raises(DataError, match=r"c\.jsonl:2"):
        read_text(path)
    with pytest.raises(DataError, match="does not exist"):
        read_text(tmp_path / "missing.txt")


def test_bpe_tokenizer_trains_on_the_corpus():
    tok = load_tokenizer("bpe:300", lambda: ["the blick glorps. the daxes meck."] * 50)
    ids = tok.encode("the blick glorps.")
    assert tok.vocab_size <= 300 and len(ids) < len("the blick glorps.")
    assert tok.decode(ids) == "the blick glorps."


def test_gpt2_tokenizer_from_shared_files(shared_data):
    tok = load_tokenizer(f"gpt2:{shared_data / 'tokenizers' / 'gpt2'}")
    assert tok.vocab_size == 50257
    assert tok.encode("Hello world") == [15496, 995]  # GPT-2's published ids
    assert tok.decode(tok.encode(" Hello, world!")) == " Hello, world!"


def test_agreement_pairs_differ_only_in_the_main_verb_number():
    rng = random.Random(5)
    for _ in range(100):
        good, bad = synthetic.agreement_pair(rng)
        g, b = good.split(), bad.split()
        assert g[:-1] == b[:-1] and g[-1] != b[-1]
        assert {g[-1].rstrip("."), b[-1].rstrip(".")} in (
            {v, v + "s"} for v in synthetic.INTRANSITIVE
        )
