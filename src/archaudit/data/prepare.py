"""`archaudit data prepare`: a corpus of any size → sharded token files with an index.

Sources (see `text_stream`): a .txt / .jsonl / .parquet file, a directory of them (in sorted
path order), nanoGPT-style token `.bin` files (uint16, copied as they are), or a Hugging Face
dataset folder written by `save_to_disk` (or `hf:NAME[:SPLIT]` from the local `datasets` cache;
the `hf` extra).

The text is read as a stream and cut into the same line-aligned pieces that `corpus.encode`
cuts a whole file into, so a prepared file trains on exactly the tokens of the file itself.
Worker processes tokenize the pieces while this process writes them in order: the shards are
byte-identical for any worker count, and memory holds a few pieces per worker, never the corpus.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from archaudit.data.shards import INDEX_FILE, TOKENIZER_FILE, shard_name
from archaudit.data.tokenizers import ByteTokenizer, HFTokenizer, Tokenizer, load_tokenizer
from archaudit.errors import DataError
from archaudit.files import atomic_write, atomic_write_text, check_output_folder
from archaudit.progress import progress

PIECE_CHARS = 1 << 16  # the piece size of corpus.encode: identical cuts, identical tokens
PIECES_PER_TASK = 16  # ~1 MB of text per worker task
TEXT_SUFFIXES = (".txt", ".md", ".jsonl", ".parquet")
READ_CHARS = 1 << 20


@dataclass(frozen=True)
class PrepareResult:
    out: Path
    n_tokens: int
    n_shards: int
    content_hash: str


def prepare(
    source: str | Path,
    tokenizer: str,
    out: str | Path,
    *,
    workers: int = 1,
    shard_tokens: int = 100_000_000,
    text_field: str = "text",
) -> PrepareResult:
    """Tokenize `source` into `out`/shard-*.bin plus `out`/index.json; returns the summary."""
    if workers < 1 or shard_tokens < 1:
        raise DataError("--workers and --shard-tokens must be ≥ 1")
    out = Path(out)
    if (out / INDEX_FILE).is_file():
        raise DataError(f"{out} already holds a prepared corpus; choose another --out")
    check_output_folder(out, "--out")  # a new or empty folder: its files are all ours
    out.mkdir(parents=True, exist_ok=True)
    src = str(source)
    bins = _token_bins(src)
    tok = _tokenizer(tokenizer, src, text_field, out)
    dtype = np.dtype(np.uint16 if tok.vocab_size <= 2**16 else np.uint32)
    writer = _ShardWriter(out, dtype, shard_tokens)
    total = _source_size(src, bins)
    n_bytes, n_train = 0, None
    with progress("prepare", total, stats="{task.fields[tokens]:,} tokens", tokens=0) as bar:
        if bins:
            n_train = _copy_bins(bins, writer, bar)
        else:
            spec = _worker_spec(tok, out)
            for n_in, ids in _tokenize(pieces(text_stream(src, text_field)), spec, workers):
                n_bytes += n_in
                writer.write(ids)
                bar.update(advance=n_in, tokens=writer.n_tokens)
    shards = writer.close()
    if not shards:
        raise DataError(f"{src}: no text found")
    content = hashlib.sha256(
        json.dumps([tok.spec, dtype.name, [s["sha256"] for s in shards]]).encode()
    ).hexdigest()
    index = {
        "format": "archaudit-tokens/1",
        "tokenizer": tok.spec,
        "vocab_size": tok.vocab_size,
        "dtype": dtype.name,
        "n_tokens": writer.n_tokens,
        # UTF-8 bytes of the text; token files carry no text, so they record none
        **({"n_bytes": n_bytes} if not bins else {}),
        **({"n_val": writer.n_tokens - n_train} if n_train is not None else {}),
        "content_hash": content,
        "source": Path(src).name if not src.startswith("hf:") else src,
        "shards": shards,
    }
    atomic_write_text(out / INDEX_FILE, json.dumps(index, indent=2))
    return PrepareResult(out, writer.n_tokens, len(shards), content)


# ---------------------------------------------------------------------------------------------
# reading: a stream of text segments, re-cut into pieces


def text_stream(source: str, text_field: str = "text") -> Iterator[str]:
    """The corpus as consecutive text segments. A .jsonl/.parquet file's documents and a
    directory's files are joined by one newline, as `corpus.read_text` joins a .jsonl file."""
    if source.startswith("hf:"):
        yield from _joined(_hf_texts(source[3:], text_field))
        return
    path = Path(source)
    if path.is_dir() and _is_hf_folder(path):
        yield from _joined(_hf_texts(str(path), text_field))
        return
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
        if not files:
            raise DataError(f"{path}: no {'/'.join(TEXT_SUFFIXES)} files in this directory")
        for i, file in enumerate(files):
            if i:
                yield "\n"
            yield from _file_stream(file, text_field)
        return
    if not path.is_file():
        raise DataError(f"corpus source {source!r} does not exist (a file, folder or hf:NAME)")
    yield from _file_stream(path, text_field)


def pieces(segments: Iterable[str], size: int = PIECE_CHARS) -> Iterator[str]:
    """Cut a segment stream exactly where `corpus._chunks` cuts the joined text: each piece
    ends at the first newline at or after `size` characters into it."""
    buf = ""
    for segment in segments:
        buf += segment
        start = 0
        while (end := buf.find("\n", start + size)) >= 0:
            yield buf[start : end + 1]
            start = end + 1
        buf = buf[start:]
    if buf:
        yield buf


def _file_stream(path: Path, text_field: str) -> Iterator[str]:
    if path.suffix == ".jsonl":
        yield from _joined(_jsonl_texts(path, text_field))
    elif path.suffix == ".parquet":
        yield from _joined(_parquet_texts(path, text_field))
    elif path.suffix in (".txt", ".md", ""):
        with open(path, encoding="utf-8") as f:
            while block := f.read(READ_CHARS):
                yield block
    else:
        raise DataError(f"{path}: unsupported suffix {path.suffix!r}; use {TEXT_SUFFIXES}")


def _joined(texts: Iterable[str]) -> Iterator[str]:
    """Documents with one newline between consecutive ones."""
    for i, text in enumerate(texts):
        if i:
            yield "\n"
        yield text


def _jsonl_texts(path: Path, field: str) -> Iterator[str]:
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                text = json.loads(line)[field]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise DataError(
                    f"{path}:{line_no}: expected a JSON object with a string field {field!r}"
                ) from None
            yield text


def _parquet_texts(path: Path, field: str) -> Iterator[str]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"{path}: reading .parquet needs pyarrow (pip install pyarrow)") from None
    reader = pq.ParquetFile(path)
    if field not in reader.schema_arrow.names:
        raise DataError(f"{path}: no column {field!r} (columns: {reader.schema_arrow.names})")
    for batch in reader.iter_batches(batch_size=1024, columns=[field]):
        yield from batch.column(0).to_pylist()


def _is_hf_folder(path: Path) -> bool:
    return (path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file()


def _hf_texts(name: str, field: str) -> Iterator[str]:
    """A `save_to_disk` folder (memory-mapped Arrow), or `NAME[:SPLIT]` from the datasets
    cache; streamed when the machine is online and HF_DATASETS_OFFLINE is not set."""
    try:
        import datasets
    except ImportError:
        raise DataError(
            "Hugging Face datasets need the `hf` extra (pip install datasets)"
        ) from None
    if Path(name).is_dir():
        data = datasets.load_from_disk(name)
        if isinstance(data, datasets.DatasetDict):
            data = data["train"] if "train" in data else data[sorted(data)[0]]
    else:
        repo, _, split = name.partition(":")
        offline = os.environ.get("HF_DATASETS_OFFLINE") == "1"
        data = datasets.load_dataset(repo, split=split or "train", streaming=not offline)
    if field not in (data.column_names or []):
        raise DataError(f"dataset {name!r}: no column {field!r} (columns: {data.column_names})")
    for row in data:
        yield row[field]


VAL_STEMS = ("val", "valid", "validation")
"""nanoGPT's prepare scripts write train.bin and val.bin: a file with one of these names is
the validation split, written after the others and recorded as `n_val` in index.json."""


def _token_bins(source: str) -> list[Path]:
    """nanoGPT-style uint16 token files: a .bin file, or a folder holding only .bin files
    (validation files last)."""
    path = Path(source)
    if path.is_file() and path.suffix == ".bin":
        return [path]
    if path.is_dir() and not _is_hf_folder(path):
        files = sorted(p for p in path.rglob("*") if p.is_file())
        if files and all(p.suffix == ".bin" for p in files):
            return sorted(files, key=lambda p: (_is_val(p), str(p)))
    return []


def _is_val(path: Path) -> bool:
    return path.stem.lower() in VAL_STEMS


def _copy_bins(bins: list[Path], writer: _ShardWriter, bar: Any) -> int | None:
    """Copy the token files in order; the tokens before the first validation file (None when
    there is no train/val pair)."""
    n_train = None
    for path in bins:
        if _is_val(path) and n_train is None and writer.n_tokens:
            n_train = writer.n_tokens
        ids = np.memmap(path, dtype=np.uint16, mode="r")
        for start in range(0, len(ids), 1 << 24):
            writer.write(np.asarray(ids[start : start + (1 << 24)]))
        bar.update(advance=path.stat().st_size, tokens=writer.n_tokens)
    return n_train


def _source_size(source: str, bins: list[Path]) -> int:
    """Progress total: bytes of the files read (0 = unknown, e.g. a streamed dataset)."""
    if bins:
        return sum(p.stat().st_size for p in bins)
    path = Path(source)
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.suffix in TEXT_SUFFIXES)
    return 0


# ---------------------------------------------------------------------------------------------
# tokenizing in worker processes, results in order


def _tokenizer(spec: str, source: str, text_field: str, out: Path) -> Tokenizer:
    """Load the tokenizer; a `bpe:<V>` one is trained on the stream and saved beside shards."""
    tok = load_tokenizer(spec, lambda: pieces(text_stream(source, text_field)))
    if isinstance(tok, HFTokenizer) and spec.startswith("bpe:"):
        atomic_write(out / TOKENIZER_FILE, lambda p: tok.save(p))
    return tok


def _worker_spec(tok: Tokenizer, out: Path) -> str:
    """What a worker loads: a trained BPE from its saved file, anything else by its spec."""
    return f"hf:{out / TOKENIZER_FILE}" if (out / TOKENIZER_FILE).is_file() else tok.spec


_WORKER_TOKENIZER: list[Tokenizer] = []


def _init_worker(spec: str) -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one core per worker, as --workers says
    _WORKER_TOKENIZER[:] = [load_tokenizer(spec)]


def _encode_task(texts: list[str]) -> tuple[int, np.ndarray]:
    """(UTF-8 bytes in, token ids out) for one task's pieces."""
    tok = _WORKER_TOKENIZER[0]
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    if isinstance(tok, ByteTokenizer):
        return n_bytes, np.frombuffer("".join(texts).encode("utf-8"), dtype=np.uint8)
    assert isinstance(tok, HFTokenizer)
    rows = tok.encode_batch(texts)
    return n_bytes, np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64)


def _tokenize(texts: Iterator[str], spec: str, workers: int) -> Iterator[tuple[int, np.ndarray]]:
    """Tasks in submission order; at most 2 per worker in flight, so memory stays bounded."""
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(spec,)) as pool:
        pending: deque[Future] = deque()
        for task in _batched(texts, PIECES_PER_TASK):
            pending.append(pool.submit(_encode_task, task))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _batched(items: Iterator[str], n: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


# ---------------------------------------------------------------------------------------------
# writing fixed-size shards


class _ShardWriter:
    """Appends tokens to shard-00000.bin, shard-00001.bin, ... of exactly `shard_tokens` each
    (the last one shorter); each shard is renamed into place once complete."""

    def __init__(self, out: Path, dtype: np.dtype, shard_tokens: int) -> None:
        self.out, self.dtype, self.shard_tokens = out, dtype, shard_tokens
        self.n_tokens = 0
        self.shards: list[dict[str, object]] = []
        self._file: BinaryIO | None = None
        self._hash = hashlib.sha256()
        self._in_shard = 0

    def write(self, ids: np.ndarray) -> None:
        if len(ids) and int(ids.max()) > np.iinfo(self.dtype).max:
            raise DataError(f"token id {int(ids.max())} does not fit {self.dtype.name}")
        ids = ids.astype(self.dtype, copy=False)
        while len(ids):
            if self._file is None:
                self._file = open(self._tmp(), "wb")  # noqa: SIM115 (spans write calls)
            take = ids[: self.shard_tokens - self._in_shard]
            data = take.tobytes()
            self._file.write(data)
            self._hash.update(data)
            self._in_shard += len(take)
            self.n_tokens += len(take)
            ids = ids[len(take) :]
            if self._in_shard == self.shard_tokens:
                self._finish()

    def close(self) -> list[dict[str, object]]:
        if self._file is not None:
            self._finish()
        return self.shards

    def _tmp(self) -> Path:
        return self.out / f".{shard_name(len(self.shards))}.tmp"

    def _finish(self) -> None:
        assert self._file is not None
        self._file.close()
        name = shard_name(len(self.shards))
        os.replace(self._tmp(), self.out / name)
        self.shards.append(
            {"file": name, "tokens": self._in_shard, "sha256": self._hash.hexdigest()}
        )
        self._file, self._hash, self._in_shard = None, hashlib.sha256(), 0
