"""Held-out loss and bits per byte of a text under any scoring LM, on a fixed token budget.

Loss per token depends on the tokenizer; bits per byte does not (the same text has the same
bytes whatever the vocabulary), so it is what compares a byte-level model with a BPE one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

from archaudit.errors import DataError
from archaudit.evals.scoring import ScoringModel, rolling_pairs, score_tokens


@dataclass(frozen=True, kw_only=True)
class HeldoutLoss:
    loss: float
    """Mean negative log-likelihood, nats per predicted token."""
    bits_per_byte: float
    """Total negative log-likelihood in bits over the UTF-8 bytes of the predicted text."""
    tokens: int
    bytes: int
    window: int
    """Tokens of model input per window (the model's maximum length)."""
    stride: int
    """Tokens predicted per window after the first (= window: lm-eval's rolling loss)."""
    context: int
    """Tokens of context each full window after the first conditions on (window - stride + 1;
    the last, partial window gets more, as in lm-eval)."""
    windows: int

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def heldout_loss(
    model: ScoringModel,
    text: str | Path,
    *,
    token_budget: int = 65536,
    stride: int | None = None,
    batch_size: int = 16,
    show_progress: bool = True,
) -> HeldoutLoss:
    """Score the first `token_budget` tokens of `text` (a string or a UTF-8 file path).

    Windows as lm-eval's `loglikelihood_rolling` (`rolling_pairs`): the first predicts from the
    prefix token, each later full window conditions on the one token before it, the last,
    partial window on enough tokens to fill the model's length. `stride` < the model's length
    slides the window instead, so every prediction sees at least `length - stride` tokens.
    """
    if isinstance(text, Path):
        if not text.is_file():
            raise DataError(f"held-out text {text} not found; pass an existing UTF-8 text file")
        text = text.read_text(encoding="utf-8")
    ids = _first_tokens(model, text, token_budget)
    stride = stride or model.max_length
    pairs = rolling_pairs(ids, model.prefix_token_id, model.max_length, stride)
    if not pairs:
        raise DataError("held-out text is too short to score: it needs at least two tokens")
    scores = score_tokens(
        model, pairs, batch_size=batch_size, show_progress=show_progress, description="held-out"
    )
    nats = -sum(s.logprob for s in scores)
    predicted = [t for _, cont in pairs for t in cont]
    n_bytes = len(model.decode(predicted).encode("utf-8"))
    return HeldoutLoss(
        loss=nats / len(predicted),
        bits_per_byte=nats / math.log(2) / n_bytes,
        tokens=len(predicted),
        bytes=n_bytes,
        window=model.max_length,
        stride=stride,
        context=model.max_length - stride + 1,
        windows=len(pairs),
    )


def _first_tokens(model: ScoringModel, text: str, budget: int) -> list[int]:
    """The first `budget` tokens of `text`, encoding only as much of a long text as needed."""
    chars = 8 * budget  # more than enough characters for any tokenizer but a pathological one
    while True:
        ids = model.encode(text[:chars])
        if len(ids) > budget or chars >= len(text):
            return ids[:budget]
        chars *= 2
