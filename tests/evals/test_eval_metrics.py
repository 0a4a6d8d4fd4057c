"""Wilson intervals and held-out loss / bits per byte against independent formulas."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

from archaudit.errors import DataError
from archaudit.evals import heldout_loss, wilson


@pytest.mark.parametrize(("correct", "n"), [(0, 10), (10, 10), (37, 50), (1, 3), (500, 1000)])
def test_wilson_matches_statsmodels(correct: int, n: int) -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    low, high = wilson(correct, n)
    ref_low, ref_high = proportion.proportion_confint(correct, n, alpha=0.05, method="wilson")
    assert (low, high) == pytest.approx((ref_low, ref_high), abs=1e-9)
    assert high - low > 0  # never a zero-width interval, even at 0% or 100%


class UniformLM:
    """Every next token equally likely: loss ln V per token, whatever the text."""

    name = "uniform"
    max_length = 16
    context_length = 16
    position_limit = None
    tree_attention = False
    device = torch.device("cpu")

    def __init__(self, vocab: int = 256, prefix: int | None = None, pieces: int = 1) -> None:
        self.vocab, self.prefix_token_id, self.pieces = vocab, prefix, pieces
        self.vocab_size = vocab

    def encode(self, text: str) -> list[int]:
        data = text.encode("utf-8")  # `pieces` bytes per token
        return [
            int.from_bytes(data[i : i + self.pieces], "big") % self.vocab
            for i in range(0, len(data), self.pieces)
        ]

    def decode(self, ids: Sequence[int]) -> str:
        return "x" * len(ids) * self.pieces  # ASCII stand-in of the right byte length

    def logits_at(self, ids: torch.Tensor, index: torch.Tensor, **_: object) -> torch.Tensor:
        return torch.zeros(*index.shape, self.vocab)


def test_uniform_byte_model_has_loss_ln256_and_eight_bits_per_byte() -> None:
    text = "héllo wörld, " * 50
    result = heldout_loss(UniformLM(), text, token_budget=300, show_progress=False)
    assert result.tokens == 299  # no prefix token: the first token conditions the rest
    assert result.loss == pytest.approx(math.log(256))
    assert result.bits_per_byte == pytest.approx(8.0)


def test_bits_per_byte_divides_by_bytes_not_tokens() -> None:
    # Two bytes per token over a 1024-token vocabulary: 10 bits per token, 5 bits per byte.
    result = heldout_loss(
        UniformLM(vocab=1024, prefix=0, pieces=2), "ab" * 400, token_budget=100, show_progress=False
    )
    assert result.tokens == 100 and result.bytes == 200
    assert result.loss == pytest.approx(math.log(1024))
    assert result.bits_per_byte == pytest.approx(5.0)


def test_heldout_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        heldout_loss(UniformLM(), tmp_path / "none.txt", show_progress=False)
