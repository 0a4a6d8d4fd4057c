"""Issue 45, item 2: the choices of an item scored from one cached pass over their shared
context give today's log-likelihoods (the full forward per input) to 1e-5, on every built-in
suite (the real files where ../shared/data has them) and under every registered modification;
a model whose computation the cache would change declares so and is scored in full."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from eval_helpers import SHARED_DATA, tiny_archaudit_lm

from archaudit.config import ModelConfig, build
from archaudit.evals import ArchauditLM, builtin_suites, load_suite
from archaudit.evals.scoring import MIN_SHARED, ScoringModel, encode_pairs, score_tokens
from archaudit.evals.tasks import LoadContext, TaskSpec, load_items, score_task
from archaudit.mods import list_modifications
from archaudit.mods.arms import resolve_arm

TOLERANCE = 1e-5
LIMIT = 12
"""Items per task: enough for several shared contexts per task, cheap on two cores."""


def _full(model: ScoringModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """Today's path: the model offers no shared context, so every input runs in full."""
    monkeypatch.setattr(model, "context_cache", lambda: None)


def _task_logprobs(model: ScoringModel, spec: TaskSpec, data_root: Path) -> list[float]:
    items = load_items(spec, LoadContext(data_root=data_root, limit=LIMIT, model=model))
    result = score_task(model, spec, items, show_progress=False)
    return [lp for item in result.items for lp in item.logprobs]


def _data_root(name: str) -> Path:
    """Suites of generated items need no file; the others read ../shared/data."""
    if name != "demo" and not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA


@pytest.mark.parametrize("suite", sorted(builtin_suites()))
def test_every_suite_scores_as_in_full(suite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data_root = _data_root(suite)
    model = tiny_archaudit_lm(context_length=1024)  # bytes: PIQA's longest choice fits
    specs = [t for t in load_suite(suite).tasks if not t.path or (data_root / t.path).exists()]
    assert specs, f"suite {suite!r}: none of its files is under {data_root}"
    for spec in specs:
        shared = _task_logprobs(model, spec, data_root)
        with monkeypatch.context() as patch:
            _full(model, patch)
            full = _task_logprobs(model, spec, data_root)
        delta = torch.tensor(shared, dtype=torch.float64) - torch.tensor(full, dtype=torch.float64)
        assert len(shared) == len(full) and float(delta.abs().max()) <= TOLERANCE, spec.name


def _choice_pairs(model: ScoringModel) -> list[tuple[list[int], list[int]]]:
    """Four questions of four choices each (one a prefix of another), a preamble shared by
    all, and inputs too short to share anything."""
    preamble = "Answer each question with the best choice.\n\n"
    requests = [
        (f"{preamble}Question {q}: what comes after {q} {q + 1}?\nAnswer:", f" {choice}")
        for q in range(4)
        for choice in ("one", "two", "two three", "a longer answer")
    ]
    requests += [("", "solo"), ("ab", "c")]
    return encode_pairs(model, requests)


def _agree(model: ScoringModel, monkeypatch: pytest.MonkeyPatch) -> float:
    pairs = _choice_pairs(model)
    shared = score_tokens(model, pairs, show_progress=False, batch_size=5)
    monkeypatch.setattr(model, "context_cache", lambda: None)
    full = score_tokens(model, pairs, show_progress=False, batch_size=5)
    assert [s.greedy for s in shared] == [s.greedy for s in full]
    return max(abs(a.logprob - b.logprob) for a, b in zip(shared, full, strict=True))


def _count_cache_calls(model: ScoringModel, monkeypatch: pytest.MonkeyPatch) -> list:
    """(prefix length, rows) of every pass through the model's shared context."""
    calls: list[tuple[int, int]] = []
    make = model.context_cache  # type: ignore[attr-defined]

    def counting() -> object:
        cache = make()
        assert cache is not None

        def run(prefixes: torch.Tensor, rows: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
            calls.append((prefixes.shape[1], int(rows.sum())))
            return cache(prefixes, rows, *rest)

        return run

    monkeypatch.setattr(model, "context_cache", counting)
    return calls


def test_the_shared_path_is_taken_and_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache runs once per group of inputs sharing a context, not once per input."""
    model = tiny_archaudit_lm(context_length=128)
    calls = _count_cache_calls(model, monkeypatch)
    score_tokens(model, _choice_pairs(model), show_progress=False, batch_size=5)
    rows = sum(b for _, b in calls)
    assert calls and all(p >= MIN_SHARED for p, _ in calls)
    assert rows < 16, "the input that is a prefix of another is read from the longer one's row"
    assert _agree(tiny_archaudit_lm(context_length=128), monkeypatch) <= TOLERANCE


def test_each_question_keeps_its_whole_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next question, which shares the preamble and "Question " with this one, does not
    cut the cached context to those: every pass through the cache carries a whole question,
    and questions of one context length share their passes."""
    model = tiny_archaudit_lm(context_length=128)
    calls = _count_cache_calls(model, monkeypatch)
    pairs = _choice_pairs(model)
    score_tokens(model, pairs, show_progress=False, batch_size=5)
    questions = {tuple(context) for context, _ in pairs if len(context) >= MIN_SHARED}
    # the input before a question's first scored token: its context less the last token
    assert [p for p, _ in calls] == [min(map(len, questions)) - 1]


def test_the_lm_eval_adapter_scores_from_shared_contexts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """lm-eval hands every loglikelihood request of a task to `_loglikelihood_tokens` at once
    (`TemplateLM.loglikelihood`), so the adapter's choices share their context as ours do."""
    adapter = pytest.importorskip("archaudit.evals.lmeval_adapter")
    model = tiny_archaudit_lm(context_length=128)
    pairs = _choice_pairs(model)
    ours = [s.logprob for s in score_tokens(model, pairs, show_progress=False)]
    calls = _count_cache_calls(model, monkeypatch)
    harness = adapter.ArchauditHarnessLM(model=model)
    requests = [(None, context, continuation) for context, continuation in pairs]
    theirs = [lp for lp, _ in harness._loglikelihood_tokens(requests, disable_tqdm=True)]
    assert calls and len(calls) < len(pairs)
    assert max(abs(a - b) for a, b in zip(ours, theirs, strict=True)) == 0.0


BASE = {"vocab_size": 300, "d_model": 64, "n_layers": 2, "n_heads": 4, "context_length": 128}
BASE |= {"init": {"std": 0.3}}  # peaked logits: greedy ties cannot decide a comparison


FAST = ("baseline", "switch_moe", "mla", "alibi", "learned_pos", "swa", "albert_sharing")
"""In the default run (the fallback, latent attention, a bias, learned positions, a window,
shared blocks); the other modifications run under `-m slow`."""


@pytest.mark.parametrize(
    "name",
    [
        m.name if m.name in FAST else pytest.param(m.name, marks=pytest.mark.slow)
        for m in list_modifications()
    ],
)
def test_every_modification_scores_as_in_full_or_falls_back(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An arm whose model cannot share a cached context (`supports_kv_cache`: a router that
    compares tokens) offers none and is scored in full; every other agrees to 1e-5. In
    float64, so that the peaked logits that make greedy flags comparable do not turn float32
    rounding of sums over long continuations into the difference measured (the suites' test
    above measures float32)."""
    from archaudit.data.tokenizers import ByteTokenizer
    from archaudit.model import build_model

    torch.manual_seed(0)
    cfg = resolve_arm(name).apply(build(ModelConfig, BASE, section="model"))
    model = ArchauditLM(build_model(cfg).double(), ByteTokenizer())
    if not model.model.supports_kv_cache():
        assert model.context_cache() is None
    assert _agree(model, monkeypatch) <= TOLERANCE
