"""`archaudit data prepare`: sharded token files that train exactly like the original corpus."""

import json
import random
import subprocess
import sys

import numpy as np
import pytest

from archaudit.config import ModelConfig, Recipe
from archaudit.data.corpus import _chunks, encode, prepare_corpus, read_text
from archaudit.data.identity import recipe_hash
from archaudit.data.prepare import pieces, prepare
from archaudit.data.shards import TokenShards, open_prepared
from archaudit.data.tokenizers import load_tokenizer
from archaudit.data.vocabulary import trained_model
from archaudit.errors import ConfigError, DataError
from archaudit.train import train


def _tokens(folder) -> np.ndarray:
    shards = open_prepared(folder).tokens()
    return np.asarray(shards[np.arange(len(shards))])


def _random_text(seed: int, n_lines: int) -> str:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "δέλτα", "epsilon", "", "zeta eta theta"]
    return "".join(
        " ".join(rng.choice(words) for _ in range(rng.randint(0, 30))) + "\n"
        for _ in range(n_lines)
    )


@pytest.mark.parametrize("size", [1, 7, 64, 1000])
def test_pieces_cut_a_stream_where_chunks_cut_the_whole_text(size):
    text = _random_text(size, 400) + "no final newline"
    rng = random.Random(size)
    cuts = sorted(rng.sample(range(len(text)), 25))
    segments = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert list(pieces(segments, size)) == list(_chunks(text, size))


def test_token_shards_index_like_one_array():
    parts = [np.arange(0, 7, dtype=np.uint16), np.arange(7, 10, dtype=np.uint16)]
    parts.append(np.arange(10, 25, dtype=np.uint16))
    whole = np.arange(25, dtype=np.uint16)
    shards = TokenShards(parts)
    idx = np.array([[0, 6, 7, 9], [10, 24, 3, 8]])
    assert len(shards) == 25 and np.array_equal(shards[idx], whole[idx])
    view = shards[5:20]
    assert len(view) == 15 and np.array_equal(view[np.arange(15)], whole[5:20])


@pytest.mark.parametrize("tokenizer", ["byte", "gpt2"])
def test_prepared_tokens_equal_the_whole_file_for_any_worker_count(
    tmp_path, shared_data, tokenizer
):
    source = shared_data / "corpora" / "tinyshakespeare" / "input.txt"
    spec = "byte" if tokenizer == "byte" else f"gpt2:{shared_data / 'tokenizers' / 'gpt2'}"
    one = prepare(source, spec, tmp_path / "w1", workers=1, shard_tokens=150_000)
    two = prepare(source, spec, tmp_path / "w2", workers=2, shard_tokens=150_000)
    assert one.n_shards > 1 and one.content_hash == two.content_hash
    for shard in open_prepared(tmp_path / "w1").index["shards"]:
        a = (tmp_path / "w1" / shard["file"]).read_bytes()
        assert a == (tmp_path / "w2" / shard["file"]).read_bytes()
    expected = np.asarray(encode(load_tokenizer(spec), read_text(source)))
    assert np.array_equal(_tokens(tmp_path / "w1"), expected)


def test_jsonl_folder_parquet_and_saved_dataset_sources(tmp_path):
    docs = [f"document {i}: " + _random_text(i, 3) for i in range(40)]
    jsonl = tmp_path / "src" / "a.jsonl"
    jsonl.parent.mkdir()
    jsonl.write_text("".join(json.dumps({"text": d}) + "\n\n" for d in docs))
    prepare(jsonl, "byte", tmp_path / "jsonl")
    expected = np.frombuffer("\n".join(docs).encode(), dtype=np.uint8)
    assert np.array_equal(_tokens(tmp_path / "jsonl"), expected)

    (tmp_path / "src" / "b.txt").write_text("tail text\n")
    prepare(tmp_path / "src", "byte", tmp_path / "folder")
    joined = "\n".join(docs) + "\n" + "tail text\n"
    assert np.array_equal(_tokens(tmp_path / "folder"), np.frombuffer(joined.encode(), np.uint8))

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"text": docs}), tmp_path / "docs.parquet")
    prepare(tmp_path / "docs.parquet", "byte", tmp_path / "parquet")
    assert np.array_equal(_tokens(tmp_path / "parquet"), expected)

    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict({"text": docs}).save_to_disk(str(tmp_path / "saved"))
    prepare(tmp_path / "saved", "byte", tmp_path / "hf")
    assert np.array_equal(_tokens(tmp_path / "hf"), expected)


def test_nanogpt_bin_files_are_copied_as_tokens(tmp_path):
    ids = np.random.default_rng(0).integers(0, 50_000, size=5_000, dtype=np.uint16)
    ids.tofile(tmp_path / "train.bin")
    prepare(tmp_path / "train.bin", "byte", tmp_path / "out", shard_tokens=2_000)
    assert np.array_equal(_tokens(tmp_path / "out"), ids)


def test_training_on_the_prepared_folder_equals_training_on_the_file(tmp_path, shared_data):
    source = shared_data / "corpora" / "tinyshakespeare" / "input.txt"
    prepare(source, "bpe:400", tmp_path / "prepared", workers=2, shard_tokens=200_000)
    model = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=32)
    curves = []
    for name, corpus in (("file", source), ("dir", tmp_path / "prepared")):
        recipe = Recipe(
            steps=6, batch_tokens=256, corpus=str(corpus), tokenizer="bpe:400", threads=1,
            eval_every=3,
        )  # fmt: skip
        train(trained_model(model, recipe), recipe, tmp_path / name)
        rows = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        curves.append([(r["loss"], r.get("val_loss")) for r in map(json.loads, rows)])
    assert curves[0] == curves[1]


def test_recipe_hash_names_the_prepared_content_not_its_path(tmp_path):
    text = tmp_path / "a.txt"
    text.write_text(_random_text(1, 200))
    prepare(text, "byte", tmp_path / "one")
    prepare(text, "byte", tmp_path / "two")
    text.write_text(_random_text(2, 200))
    prepare(text, "byte", tmp_path / "other")
    hashes = [recipe_hash(Recipe(corpus=str(tmp_path / n))) for n in ("one", "two", "other")]
    assert hashes[0] == hashes[1] != hashes[2]


def test_bad_sources_and_tokenizer_mismatch_are_named(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        prepare(tmp_path / "missing.txt", "byte", tmp_path / "out")
    (tmp_path / "a.txt").write_text("some text\n")
    prepare(tmp_path / "a.txt", "byte", tmp_path / "out")
    with pytest.raises(DataError, match="already holds"):
        prepare(tmp_path / "a.txt", "byte", tmp_path / "out")
    with pytest.raises(ConfigError, match="prepared with 'byte'"):
        prepare_corpus(Recipe(corpus=str(tmp_path / "out"), tokenizer="bpe:300"))


def test_cli_prepare_runs_as_python_dash_m(tmp_path):
    (tmp_path / "a.txt").write_text(_random_text(3, 50))
    cmd = [sys.executable, "-m", "archaudit", "data", "prepare", str(tmp_path / "a.txt")]
    out = subprocess.run(
        [*cmd, "--out", str(tmp_path / "p"), "--json"], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout)["n_tokens"] == len((tmp_path / "a.txt").read_bytes())


@pytest.mark.slow
def test_a_200_mb_corpus_is_prepared_in_under_1_gb_of_memory(tmp_path):
    """Streaming, not loading: peak resident memory of the preparing process and of its
    largest worker, measured by getrusage in a fresh process."""
    line = "the audit trains every arm from one recipe and judges it against seed noise.\n"
    with (tmp_path / "big.txt").open("w") as f:
        for _ in range(200_000_000 // (len(line) * 1000)):
            f.write(line * 1000)
    child = (
        "import json, resource, sys\n"
        "from archaudit.data.prepare import prepare\n"
        "r = prepare(sys.argv[1], 'byte', sys.argv[2], workers=2)\n"
        "use = [resource.getrusage(w).ru_maxrss for w in "
        "(resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]\n"
        "print(json.dumps({'tokens': r.n_tokens, 'kb': use}))\n"
    )
    args = [str(tmp_path / "big.txt"), str(tmp_path / "out")]
    out = subprocess.run([sys.executable, "-c", child, *args], capture_output=True, check=True)
    result = json.loads(out.stdout)
    assert result["tokens"] == (tmp_path / "big.txt").stat().st_size
    assert max(result["kb"]) < 1024 * 1024, result


def test_nanogpt_train_val_pair_keeps_its_split_and_records_no_bytes(tmp_path):
    rng = np.random.default_rng(1)
    train_ids = rng.integers(0, 256, size=4_000, dtype=np.uint16)
    val_ids = rng.integers(0, 256, size=700, dtype=np.uint16)
    (tmp_path / "nano").mkdir()
    val_ids.tofile(tmp_path / "nano" / "val.bin")
    train_ids.tofile(tmp_path / "nano" / "train.bin")
    prepare(tmp_path / "nano", "byte", tmp_path / "out", shard_tokens=1_500)
    index = open_prepared(tmp_path / "out").index
    assert (index["n_tokens"], index["n_val"]) == (4_700, 700) and "n_bytes" not in index
    corpus = prepare_corpus(Recipe(corpus=str(tmp_path / "out"), val_fraction=0.5))
    assert np.array_equal(_all(corpus.val), val_ids)
    assert np.array_equal(_all(corpus.train), train_ids)
    assert corpus.bytes_per_token is None


def test_a_bin_or_a_folder_as_recipe_corpus_is_prepared_once(tmp_path, monkeypatch):
    ids = np.random.default_rng(2).integers(0, 256, size=3_000, dtype=np.uint16)
    ids.tofile(tmp_path / "train.bin")
    cache = tmp_path / "cache"
    first = prepare_corpus(Recipe(corpus=str(tmp_path / "train.bin")), cache)
    assert np.array_equal(_all(first.train), ids[: len(first.train)])
    assert len(list((cache / "prepared").iterdir())) == 1
    calls = []
    monkeypatch.setattr("archaudit.data.prepare.prepare", lambda *a, **k: calls.append(a))
    again = prepare_corpus(Recipe(corpus=str(tmp_path / "train.bin")), cache)
    assert calls == [] and again.key == first.key  # cached by content: not prepared again
    monkeypatch.undo()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text for a folder corpus\n" * 50)
    texts = prepare_corpus(Recipe(corpus=str(tmp_path / "docs")), cache)
    assert texts.bytes_per_token == 1.0  # a text source records its bytes truly


def test_an_unreadable_corpus_names_the_prepare_command(tmp_path):
    (tmp_path / "c.parquet").write_bytes(b"PAR1")
    with pytest.raises(DataError, match=r"archaudit data prepare .*c\.parquet --out DIR"):
        prepare_corpus(Recipe(corpus=str(tmp_path / "c.parquet")))


def _all(tokens) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.asarray(tokens[np.arange(len(tokens))])
