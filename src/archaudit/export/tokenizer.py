"""The run's tokenizer as a transformers tokenizer directory (`tokenizer.json` and its config),
so that `AutoTokenizer.from_pretrained(DIR)` gives the same ids as `archaudit`'s tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archaudit.data.tokenizers import ByteTokenizer, Tokenizer
from archaudit.errors import ConfigError


def byte_level_tokenizer() -> Any:
    """UTF-8 bytes as a `tokenizers` BPE with no merges: byte b is token b. The byte-level
    pre-tokenizer spells each byte as one printable character (GPT-2's table); with no merges
    every character stays its own token, and the byte-level decoder maps them back."""
    from tokenizers import Tokenizer as RustTokenizer
    from tokenizers import decoders, models, pre_tokenizers

    spelled = pre_tokenizers.ByteLevel.alphabet()
    by_byte = {_byte_of(char): char for char in spelled}
    vocab = {by_byte[b]: b for b in range(256)}
    tok = RustTokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def _byte_of(char: str) -> int:
    """The byte GPT-2's byte-to-unicode table spells as `char` (printable bytes as themselves,
    the others shifted past 255)."""
    code = ord(char)
    if code < 256:
        return code
    hidden = [b for b in range(256) if not _printable(b)]
    return hidden[code - 256]


def _printable(b: int) -> bool:
    return ord("!") <= b <= ord("~") or ord("¡") <= b <= ord("¬") or ord("®") <= b <= ord("ÿ")


def special_token_id(tokenizer: Tokenizer) -> int:
    """The export's BOS, EOS and pad token: the tokenizer's end-of-text token, else id 0 (the
    NUL byte for byte-level tokenizers), which the `archaudit` lm-eval model uses too."""
    return 0 if tokenizer.eos_id is None else tokenizer.eos_id


def save_tokenizer(tokenizer: Tokenizer, out: Path, context_length: int) -> None:
    """Write tokenizer.json, tokenizer_config.json and special_tokens_map.json into `out`. The
    special token is BOS, EOS and pad, as lm-eval's `hf` model needs. A byte tokenizer has no
    special tokens: `split_special_tokens` keeps the NUL byte's spelling ("Ā") in a text
    tokenised as plain text, as ours does."""
    from transformers import PreTrainedTokenizerFast

    if isinstance(tokenizer, ByteTokenizer):
        rust = byte_level_tokenizer()
    elif hasattr(tokenizer, "tok"):
        rust = tokenizer.tok
    else:
        raise ConfigError(
            f"tokenizer {getattr(tokenizer, 'spec', tokenizer)!r} has no tokenizer.json form; "
            "export supports byte, bpe:<V>, gpt2:<dir> and hf:<dir> tokenizers"
        )
    special = rust.id_to_token(special_token_id(tokenizer))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=rust,
        bos_token=special,
        eos_token=special,
        pad_token=special,
        split_special_tokens=isinstance(tokenizer, ByteTokenizer),
        model_max_length=context_length,
        clean_up_tokenization_spaces=False,
    )
    fast.save_pretrained(out)
