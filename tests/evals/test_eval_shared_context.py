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


lengths_seen: list[list[int]] = []
"""The distinct prefix lengths of each pass `_count_cache_calls` counted."""


def _count_cache_calls(model: ScoringModel, monkeypatch: pytest.MonkeyPatch) -> list:
    """(prefix length, rows) of every pass through the model's shared context."""
    calls: list[tuple[int, int]] = []
    lengths_seen.clear()
    make = model.context_cache  # type: ignore[attr-defined]

    def counting() -> object:
        cache = make()
        assert cache is not None

        def run(
            prefixes: torch.Tensor, lengths: torch.Tensor, rows: torch.Tensor, *rest: torch.Tensor
        ) -> torch.Tensor:
            calls.append((prefixes.shape[1], int(rows.sum())))
            lengths_seen.append(sorted({int(n) for n in lengths}))
            return cache(prefixes, lengths, rows, *rest)

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


HF_CLASSES = {
    "LlamaForCausalLM": {},
    "Qwen3ForCausalLM": {"head_dim": 8},  # per-head RMSNorm on q and k
    "SmolLM3ForCausalLM": {
        "no_rope_layers": [1, 0],
        "layer_types": ["sliding_attention", "full_attention"],
        "sliding_window": 12,
        "use_sliding_window": True,
    },
    "MixtralForCausalLM": {"num_local_experts": 4, "num_experts_per_tok": 2},
}
"""Stock classes `export hf` writes (a window, NoPE layers, q/k norms, experts), tiny."""
FLOAT32_ONLY = {"MixtralForCausalLM"}  # transformers' CPU experts (`_grouped_mm`) refuse float64


def _hf_model(architecture: str) -> ScoringModel:
    """A tiny random `architecture` with peaked logits, float64 where the class runs it."""
    transformers = pytest.importorskip("transformers")
    from eval_helpers import ByteHFTokenizer

    from archaudit.evals import HFCausalLM

    torch.manual_seed(0)
    config = getattr(transformers, architecture.replace("ForCausalLM", "Config"))(
        vocab_size=258, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=256, eos_token_id=257, pad_token_id=None,
        **HF_CLASSES[architecture],
    )  # fmt: skip
    network = getattr(transformers, architecture)(config)
    if architecture not in FLOAT32_ONLY:
        network = network.double()
    for parameter in network.parameters():  # peaked logits: greedy ties cannot decide
        parameter.data.normal_(0.0, 0.3)
    return HFCausalLM(network, ByteHFTokenizer(), name=architecture)


@pytest.mark.parametrize("architecture", sorted(HF_CLASSES))
def test_an_hf_model_scores_from_shared_contexts_as_in_full(
    architecture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 57: an HF model (an export) scores the choices of a question from one pass of
    transformers' KV cache over their context; the log-likelihoods are those of the path
    without it, to 1e-5 in float64 (1e-4 in float32 where the class runs nothing else), and
    the cache runs once per group of inputs, not once per input."""
    model = _hf_model(architecture)
    calls = _count_cache_calls(model, monkeypatch)
    score_tokens(model, _choice_pairs(model), show_progress=False, batch_size=5)
    assert calls and sum(rows for _, rows in calls) < 16
    monkeypatch.undo()
    assert _agree(model, monkeypatch) <= (1e-4 if architecture in FLOAT32_ONLY else TOLERANCE)


def test_a_windowed_hf_model_scores_what_its_own_forward_computes() -> None:
    """A tree's 4D mask replaced SmolLM3's sliding window (every layer saw the whole row):
    choices sharing a prefix scored 1.14 nats off the model's own forward of each input.
    A windowed model is scored without trees; with or without the shared cache it computes
    what its forward over each input alone computes."""
    model = _hf_model("SmolLM3ForCausalLM")
    assert not model.tree_attention
    pairs = _choice_pairs(model)
    network = model.model  # type: ignore[attr-defined]
    for scored in (True, False):
        scores = score_tokens(model, pairs, show_progress=False, shared_context=scored)
        for (context, continuation), score in zip(pairs, scores, strict=True):
            ids = torch.tensor([context + continuation])
            with torch.no_grad():
                logp = network(input_ids=ids).logits[0].log_softmax(-1)
            start = len(context) - 1
            reference = sum(float(logp[start + j, t]) for j, t in enumerate(continuation))
            assert abs(score.logprob - reference) <= TOLERANCE


def _small_items(model: ScoringModel) -> list[tuple[list[int], list[int]]]:
    """PIQA's shape: many items, each a context of its own length (none shared with another
    item) and two short continuations of different lengths."""
    requests = [
        (f"Question: how do I {'fold ' * (1 + q % 5)}item {q}?\nAnswer:", f" {answer}")
        for q in range(12)
        for answer in ("press it flat", "use glue" + " and tape" * (q % 3))
    ]
    return encode_pairs(model, requests)


@pytest.mark.parametrize("architecture", ["LlamaForCausalLM", "Qwen3ForCausalLM"])
def test_many_small_items_share_one_pass_as_in_full(
    architecture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 57: items of many context lengths (PIQA) are packed into the cache's two passes,
    each prefix whole and right-padded, each row at its own positions behind a padding mask
    (`ragged_context`), instead of two small passes per item; their log-likelihoods are those
    of the path without the cache to 1e-5 (float64)."""
    model = _hf_model(architecture)
    pairs = _small_items(model)
    calls = _count_cache_calls(model, monkeypatch)
    shared = score_tokens(model, pairs, show_progress=False, batch_size=32)
    assert any(len(lengths) > 1 for lengths in lengths_seen), "no pass packed two lengths"
    assert len(calls) < 12 / 2, f"{len(calls)} passes for 12 items"
    monkeypatch.undo()
    full = score_tokens(model, pairs, show_progress=False, shared_context=False)
    assert [s.greedy for s in shared] == [s.greedy for s in full]
    assert max(abs(a.logprob - b.logprob) for a, b in zip(shared, full, strict=True)) <= TOLERANCE


def test_a_model_without_ragged_prefixes_gets_one_length_per_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An archaudit model takes no padding mask: its batches' prefixes are cut to one length,
    and the small items agree with the full path all the same."""
    model = tiny_archaudit_lm(context_length=128)
    pairs = _small_items(model)
    _count_cache_calls(model, monkeypatch)
    shared = score_tokens(model, pairs, show_progress=False, batch_size=32)
    assert lengths_seen and all(len(lengths) == 1 for lengths in lengths_seen)
    monkeypatch.undo()
    full = score_tokens(model, pairs, show_progress=False, shared_context=False)
    assert max(abs(a.logprob - b.logprob) for a, b in zip(shared, full, strict=True)) <= TOLERANCE
