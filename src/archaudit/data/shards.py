"""A prepared corpus directory (written by `data.prepare`), read memory-mapped.

Layout: `index.json` (tokenizer, dtype, shard list with token counts and sha256, content hash),
`shard-00000.bin`, ... (raw token ids), and `tokenizer.json` when the tokenizer was trained on
the corpus. `TokenShards` presents the shards as one read-only token array, so the sampler
reads only the windows a rank draws and no process loads a corpus into memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from archaudit.errors import DataError
from archaudit.files import read_json_object

INDEX_FILE = "index.json"
TOKENIZER_FILE = "tokenizer.json"


def shard_name(i: int) -> str:
    return f"shard-{i:05d}.bin"


def is_prepared(path: str | Path) -> bool:
    return (Path(path) / INDEX_FILE).is_file()


class TokenShards:
    """Shards as one 1-D array: `len`, slices (views) and integer-array indexing."""

    def __init__(self, parts: list[np.ndarray], start: int = 0, stop: int | None = None) -> None:
        self.parts = parts
        self.bounds = np.cumsum([0, *(len(p) for p in parts)])  # bounds[i] = first id of part i
        self.start = start
        self.stop = int(self.bounds[-1]) if stop is None else stop
        self.dtype = parts[0].dtype

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, key: slice | np.ndarray) -> TokenShards | np.ndarray:
        if isinstance(key, slice):
            lo, hi, step = key.indices(len(self))
            if step != 1:
                raise ValueError("TokenShards supports contiguous slices only")
            return TokenShards(self.parts, self.start + lo, self.start + max(lo, hi))
        flat = np.asarray(key).ravel() + self.start
        part = np.searchsorted(self.bounds, flat, side="right") - 1
        out = np.empty(flat.shape, dtype=self.dtype)
        for i in np.unique(part):
            here = part == i
            out[here] = self.parts[i][flat[here] - self.bounds[i]]
        return out.reshape(np.shape(key))


@dataclass(frozen=True)
class PreparedCorpus:
    folder: Path
    index: dict

    @property
    def content_hash(self) -> str:
        return self.index["content_hash"]

    def tokens(self) -> np.ndarray | TokenShards:
        dtype = np.dtype(self.index["dtype"])
        parts: list[np.ndarray] = [
            np.memmap(self.folder / s["file"], dtype=dtype, mode="r") for s in self.index["shards"]
        ]
        for shard, part in zip(self.index["shards"], parts, strict=True):
            if len(part) != shard["tokens"]:
                raise DataError(
                    f"{self.folder / shard['file']}: {len(part)} tokens, the index says "
                    f"{shard['tokens']}; prepare the corpus again"
                )
        return parts[0] if len(parts) == 1 else TokenShards(parts)

    def tokenizer_spec(self) -> str:
        """What to load: the saved file of a corpus-trained tokenizer, else the recorded spec."""
        saved = self.folder / TOKENIZER_FILE
        return f"hf:{saved}" if saved.is_file() else self.index["tokenizer"]


def corpus_identity(path: str, name: str) -> str:
    """What the recipe hash records for a corpus opened at `path` and written as `name`: a
    prepared directory by its content hash (the same data hashes alike wherever it lies),
    anything else by its name as written (relative to the audit file, never made absolute)."""
    if is_prepared(path):
        return f"prepared:{open_prepared(path).content_hash}"
    return name


def open_prepared(path: str | Path) -> PreparedCorpus:
    folder = Path(path)
    try:
        index = read_json_object(folder / INDEX_FILE)
    except (OSError, DataError) as err:
        raise DataError(
            f"{folder / INDEX_FILE}: not a readable prepared-corpus index ({err})"
        ) from None
    if index is None:
        raise DataError(f"{folder / INDEX_FILE}: not a readable prepared-corpus index (missing)")
    if index.get("format") != "archaudit-tokens/1" or not index.get("shards"):
        raise DataError(f"{folder}: not a corpus written by `archaudit data prepare`")
    return PreparedCorpus(folder, index)
