"""Corpus → token memmap with a held-out split, cached by content hash.

The cache key covers everything that changes the tokens (corpus content, tokenizer spec,
generator version, split), so a changed file is re-tokenised and an unchanged one never is.
Writes are atomic (temp file + rename): concurrent runs sharing a cache cannot see half a file.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from archaudit.config import Recipe, canonical_json
from archaudit.data import synthetic
from archaudit.data.shards import TokenShards, is_prepared, open_prepared
from archaudit.data.tokenizers import (
    TRAINED,
    ByteTokenizer,
    HFTokenizer,
    Tokenizer,
    load_tokenizer,
)
from archaudit.errors import ConfigError, DataError
from archaudit.files import atomic_write, cache_dir, parse_json, read_regular_text
from archaudit.progress import log, warn


@dataclass(frozen=True)
class TokenCorpus:
    train: np.ndarray | TokenShards
    val: np.ndarray | TokenShards
    tokenizer: Tokenizer
    bytes_per_token: float | None
    """UTF-8 bytes of text per token (nats/token → bits/byte); None for token-file corpora."""
    key: str


def read_text(path: str | Path) -> str:
    """A .txt file as is, or a .jsonl file's `text` fields joined by newlines."""
    path = Path(path)
    if not path.is_file():
        where = (
            "" if path.is_absolute() else f", read from the current directory as {path.absolute()}"
        )
        raise DataError(
            f"corpus file {str(path)!r} does not exist (recipe.corpus / --corpus{where})"
        )
    if path.suffix == ".jsonl":
        texts = []
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                texts.append(json.loads(line)["text"])
            except (json.JSONDecodeError, KeyError, TypeError):
                raise DataError(
                    f"{path}:{line_no}: expected a JSON object with a string field 'text'"
                ) from None
        return "\n".join(texts)
    if path.suffix not in (".txt", ".md", ""):
        raise DataError(
            f"corpus {path}: unsupported suffix {path.suffix!r}; use .txt or .jsonl, a nanoGPT "
            f".bin, a folder, or `archaudit data prepare {path} --out DIR` and recipe.corpus = DIR"
        )
    return path.read_text(encoding="utf-8")


def corpus_text(recipe: Recipe) -> tuple[Callable[[], str], str]:
    """(the text, made when first called; its content id): the embedded synthetic language,
    whose id needs no text (every run process would otherwise generate it anew, 0.5 s, only to
    find its tokens cached), or a file."""
    if recipe.corpus == "synthetic":
        ident = f"synthetic-v{synthetic.VERSION}-{recipe.data_seed}-{recipe.corpus_chars}"
        return functools.cache(
            lambda: synthetic.generate(recipe.corpus_chars, recipe.data_seed)
        ), ident
    text = read_text(recipe.corpus_path)
    return lambda: text, hashlib.sha256(text.encode("utf-8")).hexdigest()


def prepare_corpus(recipe: Recipe, cache: Path | None = None) -> TokenCorpus:
    """Tokenise the recipe's corpus (or load it from the cache) and split off validation."""
    path = recipe.corpus_path
    if is_prepared(path):
        return _prepared_corpus(recipe, path)
    if needs_preparing(path):
        return _prepared_corpus(recipe, prepare_cached(path, recipe.tokenizer, cache))
    text, content = corpus_text(recipe)
    key_fields = {"content": content, "tokenizer": recipe.tokenizer, "val": recipe.val_fraction}
    key = hashlib.sha256(canonical_json(key_fields).encode()).hexdigest()[:20]
    folder = (cache or cache_dir()) / "tokens" / key
    tok_file = folder / "tokenizer.json"
    meta = _verified_meta(folder)
    # a learned tokenizer is read back only from an entry that proved itself (its digest is in
    # the meta): a damaged one would otherwise re-tokenise the corpus wrongly without a word
    spec = f"hf:{tok_file}" if meta is not None and tok_file.is_file() else recipe.tokenizer
    if meta is None and not text().strip():
        raise DataError(f"corpus {recipe.corpus!r} is empty")
    tokenizer = load_tokenizer(spec, lambda: _chunks(text()))
    if meta is None:
        meta, tokens = _write_tokens(folder, tokenizer, text(), recipe.val_fraction)
    else:
        tokens = np.memmap(folder / "tokens.bin", dtype=meta["dtype"], mode="r")
    split = meta["n_tokens"] - meta["n_val"]
    return TokenCorpus(
        train=tokens[:split],
        val=tokens[split:],
        tokenizer=tokenizer,
        bytes_per_token=meta["n_bytes"] / meta["n_tokens"],
        key=key,
    )


def _write_tokens(
    folder: Path, tokenizer: Tokenizer, text: str, val_fraction: float
) -> tuple[dict, np.ndarray]:
    """Tokenise `text` into `folder`: tokens.bin, then meta.json with the tokens' SHA-256 (the
    meta last, so that a killed writer leaves no entry that `_verified_meta` would accept). A
    cache folder that cannot be written (read-only, full, a file in its place) costs only the
    caching: the tokens are kept in memory, said in one line."""
    ids = encode(tokenizer, text)
    dtype = np.uint16 if tokenizer.vocab_size <= 2**16 else np.uint32
    tokens = np.asarray(ids, dtype=dtype)
    data = tokens.tobytes()
    meta = {
        "n_tokens": len(tokens),
        "n_val": max(int(len(tokens) * val_fraction), 1),
        "dtype": np.dtype(dtype).name,
        "n_bytes": len(text.encode("utf-8")),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if isinstance(tokenizer, HFTokenizer):
            atomic_write(folder / "tokenizer.json", lambda p: tokenizer.save(p))
            meta["tokenizer_sha256"] = file_digest(folder / "tokenizer.json")
        atomic_write(folder / "tokens.bin", lambda p: p.write_bytes(data))
        atomic_write(folder / "meta.json", lambda p: p.write_text(json.dumps(meta)))
    except (OSError, DataError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        warn(f"token cache {folder} cannot be written ({reason}); tokens kept in memory")
        return meta, tokens
    return meta, np.memmap(folder / "tokens.bin", dtype=dtype, mode="r")  # paged, not held


def _verified_meta(folder: Path) -> dict | None:
    """The cached tokens' meta.json when the entry proves itself: well-formed fields, a regular
    tokens.bin of exactly n_tokens tokens, and the SHA-256s the meta recorded (of the tokens and
    of a learned tokenizer.json, which must be there exactly when it was saved). Otherwise None
    (rebuilt by the caller), with one line when an entry was there but did not check out: a
    zeroed or truncated tokens.bin would otherwise train on the wrong data without a word."""
    text = read_regular_text(folder / "meta.json")
    if text is None:
        if (folder / "meta.json").exists():
            warn(f"{folder / 'meta.json'}: not a regular file; the token cache is rebuilt")
        return None
    try:
        meta = parse_json(text, folder / "meta.json")
        dtype = np.dtype(meta["dtype"]) if meta["dtype"] in ("uint16", "uint32") else None
        n_tokens, n_val = meta["n_tokens"], meta["n_val"]
        sizes_ok = type(n_tokens) is int and type(n_val) is int and 0 < n_val <= n_tokens
        tokens = folder / "tokens.bin"
        if dtype is None or not sizes_ok or not meta["n_bytes"] > 0 or not tokens.is_file():
            raise ValueError
        if tokens.stat().st_size != n_tokens * dtype.itemsize:
            raise ValueError
        if file_digest(tokens) != meta["sha256"]:
            raise ValueError
        if _tokenizer_digest(folder) != meta.get("tokenizer_sha256"):
            raise ValueError
    except (ValueError, KeyError, TypeError, DataError):
        warn(f"{folder}: a token cache entry that does not check out (meta, size or checksum); "
             "rebuilt")  # fmt: skip
        return None
    return meta


def _tokenizer_digest(folder: Path) -> str | None:
    """The learned tokenizer's SHA-256 (None without one: a byte or GPT-2 file tokenizer)."""
    path = folder / "tokenizer.json"
    return file_digest(path) if path.is_file() else None


def _prepared_corpus(recipe: Recipe, folder: str | Path) -> TokenCorpus:
    """A directory from `archaudit data prepare`: memory-mapped shards, the same split rule,
    or the split the source brought (nanoGPT's val.bin, recorded as `n_val`)."""
    prepared = open_prepared(folder)
    used = prepared.index["tokenizer"]
    if not _same_tokenizer(recipe.tokenizer, used):
        raise ConfigError(
            f"recipe.tokenizer = {recipe.tokenizer!r}, but corpus {recipe.corpus} was prepared "
            f"with {used!r}; set recipe.tokenizer = {used!r} or prepare the corpus again"
        )
    tokens = prepared.tokens()
    index = prepared.index
    n_val = index.get("n_val") or max(int(index["n_tokens"] * recipe.val_fraction), 1)
    split = index["n_tokens"] - n_val
    n_bytes = index.get("n_bytes")  # absent for token files: they hold no text
    return TokenCorpus(
        train=tokens[:split],
        val=tokens[split:],
        tokenizer=load_tokenizer(prepared.tokenizer_spec()),
        bytes_per_token=n_bytes / index["n_tokens"] if n_bytes else None,
        key=prepared.content_hash[:20],
    )


def needs_preparing(corpus: str) -> bool:
    """A nanoGPT `.bin` token file or a folder (of text files, of `.bin` files, or a
    `save_to_disk` dataset): sources only `data prepare` reads."""
    path = Path(corpus)
    return (path.is_file() and path.suffix == ".bin") or (path.is_dir() and not is_prepared(path))


def prepare_cached(source: str, tokenizer: str, cache: Path | None = None) -> Path:
    """`archaudit data prepare SOURCE` run once into the cache, keyed by the source's content
    and the tokenizer; later runs (any process) reuse it. Prepared into a private folder and
    renamed into place, so concurrent runs never read half a corpus."""
    from archaudit.data.prepare import prepare

    files = [source] if Path(source).is_file() else sorted(str(p) for p in Path(source).rglob("*"))
    digest = hashlib.sha256(canonical_json({"tokenizer": tokenizer}).encode())
    for name in files:
        if Path(name).is_file():
            digest.update(Path(name).relative_to(Path(source).parent).as_posix().encode())
            digest.update(file_digest(Path(name)).encode())
    folder = (cache or cache_dir()) / "prepared" / digest.hexdigest()[:20]
    if not is_prepared(folder):
        log(f"preparing corpus {source} once (cached in {folder})")
        private = folder.with_name(f".{folder.name}.{os.getpid()}")
        shutil.rmtree(private, ignore_errors=True)
        prepare(source, tokenizer, private)
        with contextlib.suppress(OSError):  # another process may have won: use its copy
            private.rename(folder)
        shutil.rmtree(private, ignore_errors=True)
    return folder


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _same_tokenizer(a: str, b: str) -> bool:
    (kind_a, _, arg_a), (kind_b, _, arg_b) = a.partition(":"), b.partition(":")
    if kind_a != kind_b:
        return False
    return arg_a == arg_b or bool(
        arg_a and arg_b and Path(arg_a).resolve() == Path(arg_b).resolve()
    )


def recipe_tokenizer(recipe: Recipe) -> Tokenizer:
    """The tokenizer runs of `recipe` use. One trained on the corpus (`bpe:<V>`) or saved with a
    prepared corpus is loaded as the first run would load it; any other loads by itself."""
    corpus = recipe.corpus_path
    if (
        recipe.tokenizer.partition(":")[0] in TRAINED
        or is_prepared(corpus)
        or needs_preparing(corpus)
    ):
        return prepare_corpus(recipe).tokenizer
    return load_tokenizer(recipe.tokenizer)


def encode(tokenizer: Tokenizer, text: str) -> list[int] | np.ndarray:
    if isinstance(tokenizer, ByteTokenizer):
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)  # bytes are the ids
    if isinstance(tokenizer, HFTokenizer):
        return [i for ids in tokenizer.encode_batch(list(_chunks(text))) for i in ids]
    return tokenizer.encode(text)


def _chunks(text: str, size: int = 1 << 16) -> Iterator[str]:
    """Line-aligned pieces of about `size` characters (tokenisers batch over them)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end
