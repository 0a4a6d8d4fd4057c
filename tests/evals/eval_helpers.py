"""Helpers for the evaluation tests: tiny models and an unbatched reference scorer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from archaudit.config import ModelConfig, build
from archaudit.data.tokenizers import ByteTokenizer
from archaudit.evals import ArchauditLM
from archaudit.model import build_model

SHARED_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def tiny_archaudit_lm(seed: int = 0, context_length: int = 64, **changes: Any) -> ArchauditLM:
    """A randomly initialised archaudit Transformer over bytes."""
    torch.manual_seed(seed)
    shape = dict(d_model=32, n_layers=2, n_heads=2, context_length=context_length)
    cfg = build(ModelConfig, {**shape, **changes}, section="model")  # changes: slot tables
    return ArchauditLM(build_model(cfg), ByteTokenizer())


def reference_logprob(
    model: Any, context: Sequence[int], continuation: Sequence[int]
) -> tuple[float, bool]:
    """One request, one unpadded forward over the whole sequence, every logit computed."""
    ids = torch.tensor([list(context) + list(continuation)])
    with torch.no_grad():
        out = model.model(ids[:, :-1])  # the raw module: an archaudit or a HF causal LM
    logits = getattr(out, "logits", out)  # (1, n-1, V)
    logp = F.log_softmax(logits.float(), dim=-1)[0, -len(continuation) :]
    targets = torch.tensor(continuation)
    total = float(logp.gather(1, targets[:, None]).sum())
    return total, bool((logp.argmax(-1) == targets).all())


class ByteHFTokenizer:
    """Byte-level encode/decode with the attributes `HFCausalLM` reads from a HF tokenizer."""

    bos_token_id = 256
    eos_token_id = 257

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int], **_: Any) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def tiny_hf_lm(seed: int = 0) -> Any:
    """A randomly initialised tiny Llama (rotary, takes 4D masks) as an `HFCausalLM`."""
    transformers = __import__("pytest").importorskip("transformers")
    from archaudit.evals import HFCausalLM

    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=258,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    model = transformers.LlamaForCausalLM(config)
    return HFCausalLM(model, ByteHFTokenizer(), name="tiny-llama")
