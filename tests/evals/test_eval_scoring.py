"""The scorer against an unbatched reference, and lm-eval's tokenisation convention."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch
from eval_helpers import reference_logprob, tiny_archaudit_lm, tiny_hf_lm

from archaudit.errors import DataError
from archaudit.evals import scoring
from archaudit.evals.scoring import encode_pair, encode_pairs, rolling_pairs, score_tokens


def _requests(rng: random.Random, n_items: int) -> list[tuple[list[int], list[int]]]:
    """Multiple-choice-like token pairs: shared contexts, single- and multi-token choices,
    one choice a prefix of another, lengths varied so batches need padding."""
    pairs = []
    for _ in range(n_items):
        context = [rng.randrange(256) for _ in range(rng.randint(1, 40))]
        choices = [[rng.randrange(256) for _ in range(rng.randint(1, 6))] for _ in range(3)]
        choices.append(choices[0][:1])  # a prefix of another choice
        pairs += [(context, c) for c in choices]
    return pairs


@pytest.mark.parametrize(
    "make_model", [tiny_archaudit_lm, tiny_hf_lm], ids=["archaudit", "hf-tree"]
)
@pytest.mark.parametrize("batch_size", [1, 5, 64])
def test_batched_scores_equal_unbatched_reference(make_model, batch_size: int) -> None:
    model = make_model()
    pairs = _requests(random.Random(batch_size), 12)
    scores = score_tokens(model, pairs, batch_size=batch_size, show_progress=False)
    for (context, continuation), score in zip(pairs, scores, strict=True):
        logprob, greedy = reference_logprob(model, context, continuation)
        assert score.logprob == pytest.approx(logprob, abs=1e-4)
        assert score.greedy == greedy


def test_tree_packing_changes_nothing_but_the_work() -> None:
    model = tiny_hf_lm()
    pairs = _requests(random.Random(7), 10)
    packed = score_tokens(model, pairs, show_progress=False)
    model.tree_attention = False
    plain = score_tokens(model, pairs, show_progress=False)
    assert [s.greedy for s in packed] == [s.greedy for s in plain]
    assert [s.logprob for s in packed] == pytest.approx([s.logprob for s in plain], abs=1e-4)


def test_greedy_continuation_is_recognised() -> None:
    model = tiny_archaudit_lm()
    context = list(b"the cat sat")
    greedy: list[int] = []
    for _ in range(3):  # decode three tokens greedily with the raw module
        logits = model.model(torch.tensor([context + greedy]))
        greedy.append(int(logits[0, -1].argmax()))
    other = [(greedy[0] + 1) % 256, *greedy[1:]]
    scores = score_tokens(model, [(context, greedy), (context, other)], show_progress=False)
    assert scores[0].greedy and not scores[1].greedy
    assert scores[0].logprob > scores[1].logprob


def test_long_context_is_cut_from_the_left_like_lm_eval() -> None:
    model = tiny_archaudit_lm(context_length=16)
    context, continuation = list(range(40)), [1, 2, 3]
    (score,) = score_tokens(model, [(context, continuation)], show_progress=False)
    # lm-eval feeds (context + continuation)[-(max_length + 1):][:-1]
    kept = (context + continuation)[-(16 + 1) :]
    expected, _ = reference_logprob(model, kept[: -len(continuation)], continuation)
    assert score.logprob == pytest.approx(expected, abs=1e-4)


def test_continuation_longer_than_the_model_is_refused() -> None:
    model = tiny_archaudit_lm(context_length=8)
    with pytest.raises(DataError, match="exceeds the model's maximum length"):
        score_tokens(model, [([1], list(range(9)))], show_progress=False)


def test_rolling_windows_predict_every_token_once() -> None:
    ids = list(range(10, 33))
    pairs = rolling_pairs(ids, prefix=7, max_length=5)
    assert [t for _, cont in pairs for t in cont] == ids
    assert pairs[0][0] == [7] and all(len(c) <= 5 and len(x) == 1 for x, c in pairs[:-1])
    assert len(pairs[-1][0]) + len(pairs[-1][1]) == 6  # the partial last window: full context
    assert [t for _, c in rolling_pairs(ids, None, 5) for t in c] == ids[1:]


@pytest.mark.parametrize("n", [1, 4, 5, 6, 23, 40])
@pytest.mark.parametrize("length", [1, 5, 8])
def test_rolling_windows_are_lm_eval_windows(n: int, length: int) -> None:
    """Token for token the windows of lm-eval's loglikelihood_rolling: the last, partial
    window conditions on a full-length context, not on one token."""
    utils = pytest.importorskip("lm_eval.utils")
    ids = list(range(10, 10 + n))
    theirs = utils.get_rolling_token_windows(ids, 7, length, 1)
    assert rolling_pairs(ids, 7, length) == [utils.make_disjoint_window(w) for w in theirs]


@pytest.mark.parametrize("stride", [1, 2, 3, 5])
def test_sliding_windows_predict_each_token_once_with_context(stride: int) -> None:
    ids = list(range(10, 33))
    pairs = rolling_pairs(ids, 7, 5, stride)
    assert [t for _, c in pairs for t in c] == ids
    # a stride is lm-eval's own rolling window with context_len = length - stride + 1
    utils = pytest.importorskip("lm_eval.utils")
    theirs = utils.get_rolling_token_windows(ids, 7, 5, 5 - stride + 1)
    assert pairs == [utils.make_disjoint_window(w) for w in theirs]
    for context, continuation in pairs[1:]:
        assert len(context) + len(continuation) == 6  # the model sees a full window
        assert len(continuation) <= stride


class _WordTokenizer:
    """A toy tokenizer whose tokens merge a leading space into the word, like GPT-2's."""

    prefix_token_id = 0

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}

    def encode(self, text: str) -> list[int]:
        import re

        return [
            self.vocab.setdefault(p, len(self.vocab) + 1) for p in re.findall(r" ?\S+|\s", text)
        ]


@pytest.mark.parametrize(
    ("context", "continuation"),
    [
        ("Question: why?\nAnswer:", " because"),
        ("trailing space ", "word"),
        ("two trailing  ", "x y"),
        ("newline\n", " Answer: yes"),
        ("", " whole sentence"),
    ],
)
def test_encode_pair_matches_lm_eval(context: str, continuation: str) -> None:
    model_api = pytest.importorskip("lm_eval.api.model")
    tokenizer = _WordTokenizer()

    class Harness(model_api.TemplateLM):  # lm-eval's own pairing code over the same tokenizer
        eot_token_id = 0
        loglikelihood_rolling = generate_until = None

        def tok_encode(self, string: str, **_: object) -> list[int]:
            return tokenizer.encode(string)

        def _loglikelihood_tokens(self, requests: list, **_: object) -> list:
            self.seen = [(ctx, cont) for _, ctx, cont in requests]
            return [(0.0, True)] * len(requests)

    harness = Harness()
    harness.loglikelihood([SimpleNamespace(args=(context, continuation))], disable_tqdm=True)
    ours = encode_pair(tokenizer, context, continuation)  # type: ignore[arg-type]
    assert [ours] == harness.seen
    assert encode_pairs(tokenizer, [(context, continuation)]) == [ours]  # type: ignore[arg-type]


def test_shared_prefixes_and_packing_cut_the_tokens_the_model_sees() -> None:
    model = tiny_hf_lm()
    rng = random.Random(3)
    pairs = []
    for _ in range(8):  # four short choices after one long shared context, as in ARC
        context = [rng.randrange(256) for _ in range(rng.randint(30, 60))]
        pairs += [(context, [rng.randrange(256) for _ in range(3)]) for _ in range(4)]
    seen = []
    forward = model.logits_at

    def counting(ids: torch.Tensor, index: torch.Tensor, **kwargs: object) -> torch.Tensor:
        seen.append(ids.numel())
        return forward(ids, index, **kwargs)

    model.logits_at = counting
    score_tokens(model, pairs, show_progress=False)
    plain = sum(len(c) + len(x) - 1 for c, x in pairs)
    assert sum(seen) < 0.4 * plain  # each context once, no padding to speak of


class WideVocabLM:
    """Logits a fixed function of (last input token, target) over a large vocabulary; records
    the shape of every batch of logits it returns."""

    name, max_length, context_length, position_limit = "wide", 512, 512, None
    prefix_token_id, tree_attention, device = 0, False, torch.device("cpu")
    vocab_size = 50_000

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []

    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def decode(self, ids: list[int]) -> str:
        return bytes(ids).decode()

    def logits_at(self, ids: torch.Tensor, index: torch.Tensor, **_: object) -> torch.Tensor:
        last = ids.gather(1, index).float()  # (B, K)
        logits = torch.sin(last[..., None] * torch.arange(self.vocab_size) / 97)  # (B, K, V)
        self.shapes.append(tuple(logits.shape))
        return logits


def test_batches_keep_their_logits_within_the_budget(monkeypatch) -> None:
    budget = 4 * WideVocabLM.vocab_size * 300  # room for 300 scored positions
    monkeypatch.setattr(scoring, "LOGITS_BUDGET_BYTES", budget)
    rng = random.Random(3)
    pairs = [
        ([rng.randrange(256) for _ in range(rng.randint(1, 50))], [rng.randrange(256)] * k)
        for k in (400, 120, 90, 60, 60, 30, 30, 5, 5, 5, 1, 1)
    ]
    model = WideVocabLM()
    bounded = score_tokens(model, pairs, show_progress=False)
    assert [b for b, *_ in model.shapes] != [1] * len(model.shapes)  # rows still share batches
    for b, k, v in model.shapes:
        assert b == 1 or 4 * b * k * v <= budget  # a row alone may exceed it: it cannot split
    monkeypatch.setattr(scoring, "LOGITS_BUDGET_BYTES", 2**40)
    unbounded = WideVocabLM()
    assert score_tokens(unbounded, pairs, show_progress=False) == bounded
    assert len(unbounded.shapes) < len(model.shapes)
