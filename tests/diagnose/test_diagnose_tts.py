"""Test-time scaling curves: pass@N, majority vote and budget forcing on a solver of known skill,
and a tiny model the test trains on the reasoning task."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from diagnose_helpers import FakeSolver, train_reasoning_model

from archaudit.diagnose import view_of
from archaudit.diagnose.reasoning import reasoning_corpus, reasoning_items
from archaudit.diagnose.tts import majority, pass_at, tts_curves


def test_pass_at_matches_enumeration() -> None:
    for n, c, k in [(5, 2, 1), (5, 2, 3), (6, 0, 2), (4, 4, 2), (6, 3, 4)]:
        draws = list(itertools.combinations([1] * c + [0] * (n - c), k))
        assert pass_at(n, c, k) == pytest.approx(sum(any(d) for d in draws) / len(draws))


def test_majority_ties_go_to_the_first_seen() -> None:
    assert majority(["3", "4", "4", "3"]) == "3"
    assert majority([None, "5", "5", "2"]) == "5"
    assert majority([None, None]) is None


def test_perfect_solver_needs_its_scratchpad() -> None:
    items = reasoning_items(20, seed=0, terms=3)
    curves = tts_curves(FakeSolver(1.0), items, ns=(1, 4), temperature=1.0)
    assert curves.best_of_n == [1.0, 1.0] and curves.majority_vote == [1.0, 1.0]
    assert curves.budgets[0] == 0 and curves.budget_accuracy[-1] == 1.0
    # With no scratchpad the forced answer is the greedy guess '0': right only when it is 0.
    zeros = sum(i.answer == "0" for i in items) / len(items)
    assert curves.budget_accuracy[0] == pytest.approx(zeros)


def test_noisy_solver_gains_from_samples() -> None:
    items = reasoning_items(12, seed=1, terms=3)
    curves = tts_curves(FakeSolver(0.6), items, ns=(1, 2, 4, 8), temperature=1.0, seed=0)
    assert all(b > a for a, b in itertools.pairwise(curves.best_of_n))
    assert curves.majority_vote[-1] > curves.best_of_n[0]
    assert tts_curves(FakeSolver(0.6), items, ns=(1, 2, 4, 8), seed=0) == curves  # seeded


@pytest.mark.slow
def test_trained_tiny_model_scales_with_samples(tmp_path: Path) -> None:
    corpus = tmp_path / "reasoning.txt"
    corpus.write_text(reasoning_corpus(200_000, seed=7, terms=3))
    run = train_reasoning_model(tmp_path / "run", corpus)
    view = view_of(run)
    curves = tts_curves(view, reasoning_items(60, seed=0, terms=3), ns=(1, 4, 16))
    assert 0.0 < curves.best_of_n[0] < 1.0
    assert curves.best_of_n[0] < curves.best_of_n[1] < curves.best_of_n[2]
    assert math.isfinite(sum(curves.budget_accuracy))


class _Uncached:
    """The same view with its KV cache switched off: the reference generation."""

    def __init__(self, view) -> None:  # type: ignore[no-untyped-def]
        self.view = view
        self.calls = 0

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.view, name)

    def next_logits(self, ids, cache=None):  # type: ignore[no-untyped-def]
        self.calls += 1
        return self.view.logits(ids[:, -self.view.context_length :])[:, -1], None


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_kv_cached_generation_equals_uncached_token_for_token(temperature: float) -> None:
    import torch

    from archaudit.diagnose.tts import generate

    pytest.importorskip("transformers")
    from diagnose_helpers import tiny_hf_view

    view = tiny_hf_view(seed=3)
    prompt = view.encode("12+7=")
    runs = []
    for model in (view, _Uncached(view)):
        generator = torch.Generator().manual_seed(11)
        runs.append(
            generate(model, prompt, n=3, max_new=12, temperature=temperature, generator=generator)
        )
    assert runs[0] == runs[1]
    assert all(runs[0])
    _, cache = view.next_logits(torch.tensor([prompt]))
    assert cache is not None and cache.get_seq_length() == len(prompt)
