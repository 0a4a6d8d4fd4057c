"""Tokenizers, named by a spec string in the recipe:

- `byte`            UTF-8 bytes, vocabulary 256 (the default; bits per byte come for free).
- `bpe:<V>`         byte-level BPE with V tokens trained on the run's corpus (`tokenizers`).
- `gpt2:<dir>`      GPT-2's BPE from a vocab.json + merges.txt pair in <dir>.
- `hf:<dir>`        any local Hugging Face tokenizer directory with a tokenizer.json.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from archaudit.errors import ConfigError, DataError
from archaudit.registry import Registry

if TYPE_CHECKING:
    from tokenizers import Tokenizer as RustTokenizer


class Tokenizer(Protocol):
    vocab_size: int
    eos_id: int | None
    spec: str
    """The spec string that builds this tokenizer again (`load_tokenizer(spec)`)."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class ByteTokenizer:
    """Each UTF-8 byte is a token."""

    vocab_size = 256
    eos_id: int | None = None
    spec = "byte"

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(int(i) for i in ids).decode("utf-8", errors="replace")


class HFTokenizer:
    """Wraps a `tokenizers.Tokenizer` (fast, Rust)."""

    def __init__(self, tok: RustTokenizer, spec: str) -> None:
        self.tok = tok
        self.spec = spec
        self.vocab_size = tok.get_vocab_size()
        self.eos_id = _first_id(tok, ("<|endoftext|>", "</s>", "<eos>"))

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tok.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=False)

    def save(self, path: Path) -> None:
        self.tok.save(str(path))


def _first_id(tok: RustTokenizer, names: Iterable[str]) -> int | None:
    for name in names:
        token_id = tok.token_to_id(name)
        if token_id is not None:
            return token_id
    return None


TextSource = Callable[[], Iterable[str]]
KINDS: Registry[Callable[[str, TextSource | None], Tokenizer]] = Registry("tokenizer kind")
TRAINED = ("bpe",)
"""Kinds trained on the run's corpus: they exist only once the corpus is prepared."""


@KINDS.register("byte")
def _byte(arg: str, texts: TextSource | None) -> Tokenizer:
    return ByteTokenizer()


@KINDS.register("bpe")
def _bpe(arg: str, texts: TextSource | None) -> Tokenizer:
    from tokenizers import Tokenizer as RustTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    if not arg.isdigit() or int(arg) < 257:
        raise ConfigError(f"tokenizer 'bpe:{arg}': give a vocabulary size > 256, e.g. bpe:4096")
    if texts is None:
        raise ConfigError("tokenizer 'bpe:<V>' is trained on the corpus; none was given")
    tok = RustTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=int(arg),
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts(), trainer=trainer)
    return HFTokenizer(tok, f"bpe:{arg}")


@KINDS.register("gpt2")
def _gpt2(arg: str, texts: TextSource | None) -> Tokenizer:
    from tokenizers import Tokenizer as RustTokenizer
    from tokenizers import decoders, models, pre_tokenizers

    folder = _existing_dir(arg, "gpt2")
    vocab = _first_file(folder, ("vocab.json", "gpt2_vocab.json"))
    merges = _first_file(folder, ("merges.txt", "gpt2_merges.txt"))
    tok = RustTokenizer(models.BPE.from_file(str(vocab), str(merges)))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return HFTokenizer(tok, f"gpt2:{arg}")


@KINDS.register("hf")
def _hf(arg: str, texts: TextSource | None) -> Tokenizer:
    from tokenizers import Tokenizer as RustTokenizer

    path = Path(arg)
    file = path if path.is_file() else _first_file(_existing_dir(arg, "hf"), ("tokenizer.json",))
    try:
        rust = RustTokenizer.from_file(str(file))
    except Exception as err:  # the tokenizers library raises a bare Exception for a bad file
        first = (str(err).splitlines() or [""])[0][:120]
        raise DataError(
            f"{file}: not a tokenizer.json the tokenizers library reads ({first})"
        ) from None
    return HFTokenizer(rust, f"hf:{arg}")


def load_tokenizer(spec: str, texts: TextSource | None = None) -> Tokenizer:
    """Build the tokenizer a spec names; `texts` supplies training text for `bpe:<V>`."""
    kind, _, arg = spec.partition(":")
    return KINDS.get(kind)(arg, texts)


def _existing_dir(arg: str, kind: str) -> Path:
    folder = Path(arg)
    if not arg or not folder.is_dir():
        raise DataError(f"tokenizer '{kind}:{arg}': {arg!r} is not a directory")
    return folder


def _first_file(folder: Path, names: Sequence[str]) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise DataError(f"{folder}: none of {', '.join(names)} found")
