"""A context too long for the model is cut from the left and counted (lm-eval's rule); only a
continuation that cannot fit is refused, naming the task."""

from __future__ import annotations

import pytest
from eval_helpers import reference_logprob, tiny_archaudit_lm

from archaudit.errors import DataError
from archaudit.evals import Item, TaskSpec, score_task
from archaudit.evals.scoring import score_tokens


def test_truncation_is_flagged_per_request_at_the_exact_boundary() -> None:
    model = tiny_archaudit_lm(context_length=8)
    # inputs are (context + continuation)[:-1]: 9 tokens in all fit a length of 8 exactly
    pairs = [([1] * 5, [2] * 4), ([1] * 6, [2] * 4), ([1], [2] * 8), ([1, 1], [2] * 8)]
    scores = score_tokens(model, pairs, show_progress=False)
    assert [s.truncated for s in scores] == [False, True, False, True]
    # a continuation as long as the model is scored, its context cut down to one token
    kept = ([1, 1] + [2] * 8)[-9:]
    expected, _ = reference_logprob(model, kept[:1], kept[1:])
    assert scores[3].logprob == pytest.approx(expected, abs=1e-4)


def test_task_results_count_the_truncated_contexts() -> None:
    model = tiny_archaudit_lm(context_length=16)
    long, short = "x" * 40 + " is", "ab is"
    items = [
        Item(id=f"q:{i}", contexts=(context,), continuations=("yes", "no"))
        for i, context in enumerate([long, short, long])
    ]
    spec = TaskSpec(name="qa", format="multiple_choice")
    result = score_task(model, spec, items, show_progress=False)
    assert result.truncated_contexts == 4  # two long items × two choices
    assert result.to_dict(include_items=False)["truncated_contexts"] == 4
    assert len(result.items) == 3


def test_a_continuation_that_cannot_fit_names_the_task() -> None:
    model = tiny_archaudit_lm(context_length=8)
    items = [Item(id="long:0", contexts=("",), continuations=("a sentence far too long",))]
    spec = TaskSpec(name="pairs", format="multiple_choice")
    with pytest.raises(DataError, match=r"^pairs: continuation of \d+ tokens exceeds"):
        score_task(model, spec, items, show_progress=False)
