"""Issue 36, must-show 5: greedy decoding through the KV cache gives the same tokens as the
uncached path (the whole prefix recomputed at every step), token for token, over the model
variants whose attention keeps its keys in the cache: GQA, windows, ALiBi, learned and
sinusoidal positions, differential and latent attention, value residual, shared blocks,
top-k MoE, hyper-connections. Variants that cannot be cached fall back to the uncached path."""

from __future__ import annotations

import pytest
import torch

from archaudit.config import ModelConfig, build
from archaudit.evals.generation import greedy_text, greedy_tokens
from archaudit.evals.models import ArchauditLM
from archaudit.model import build_model
from archaudit.model.kv_cache import KVCache

BASE = {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "context_length": 32}
BASE |= {"init": {"std": 0.3}}  # peaked logits: a near-tie cannot decide the comparison
VARIANTS = {
    "baseline": {},
    "gqa-window-qknorm": {"n_kv_heads": 2, "attention": {"window": 5, "global_every": 2,
                                                          "qk_norm": True, "gate": "headwise"}},
    "alibi-ssmax": {"position": {"name": "alibi"}, "attention": {"score": "ssmax"}},
    "learned": {"position": {"name": "learned"}},
    "sinusoidal-softpick": {"position": {"name": "sinusoidal"}, "attention": {"score": "softpick"}},
    "partial-rope-nope-layers": {"position": {"rope_fraction": 0.5, "nope_every": 2}},
    "differential": {"attention": {"name": "differential"}},
    "latent": {"attention": {"name": "latent", "latent_rank": 16, "latent_q_rank": 16}},
    "value-residual-sink": {"attention": {"value_residual": True, "score": "sink_softmax"}},
    "shared-blocks": {"sharing": {"blocks": 1}},
    "moe-top-k": {"mlp": {"name": "moe"}, "moe": {"experts": 4, "top_k": 2}},
    "hyper-streams": {"stream": {"name": "hyper", "n_streams": 2}},
    "attn-res-parallel": {"stream": {"name": "attn_res"}},
}  # fmt: skip


def lm(delta: dict, seed: int = 0) -> ArchauditLM:
    torch.manual_seed(seed)
    cfg = build(ModelConfig, {**BASE, **delta}, section="model")
    return ArchauditLM(build_model(cfg), tokenizer=_Bytes())


class _Bytes:
    eos_id = None

    def encode(self, text: str) -> list[int]:
        return [b % 64 for b in text.encode()]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(65 + i % 26) for i in ids)  # no stop character: decode every token


FAST = ("baseline", "alibi-ssmax")
"""In the default run; the other variants run under `-m slow`."""


@pytest.mark.parametrize(
    "name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in VARIANTS]
)
def test_cached_decoding_equals_uncached_token_for_token(name: str) -> None:
    model = lm(VARIANTS[name])
    assert model.model.supports_kv_cache()
    prompt = [(7 * i + 3) % 64 for i in range(12)]
    with torch.no_grad():
        cached, uncached = greedy_tokens(model, prompt), greedy_tokens(model, prompt, cache=False)
        tokens = [(next(cached), next(uncached)) for _ in range(16)]
    assert [a for a, _ in tokens] == [b for _, b in tokens]
    assert len({a for a, _ in tokens}) > 1, "a constant output would prove nothing"


@pytest.mark.parametrize("name", ["baseline", "latent", "alibi-ssmax", "shared-blocks"])
def test_cached_logits_match_the_full_forward(name: str) -> None:
    model = lm(VARIANTS[name]).model
    ids = torch.tensor([[(5 * i + 1) % 64 for i in range(24)]])
    with torch.no_grad():
        full = model.head(model.hidden(ids))[0]
        cache = KVCache()
        parts = [model.head(model.hidden(ids[:, :10], cache))[0]]
        parts += [model.head(model.hidden(ids[:, t : t + 1], cache))[0] for t in range(10, 24)]
    torch.testing.assert_close(torch.cat(parts), full, atol=1e-5, rtol=1e-5)
    assert cache.length == 24 and len(cache.keys) == BASE["n_layers"]


@pytest.mark.parametrize(
    "delta",
    [{"mlp": {"name": "moe"}, "moe": {"experts": 4, "top_k": 1, "routing": "expert_choice"}},
     {"mlp": {"name": "moe"}, "moe": {"experts": 4, "top_k": 1, "capacity_factor": 1.0}}],
)  # fmt: skip
def test_routers_that_compare_tokens_fall_back_to_the_uncached_path(delta: dict) -> None:
    model = lm(delta)
    assert not model.model.supports_kv_cache() and model.decoder() is None
    assert greedy_text(model, list(range(8)), max_new_tokens=3) != ""


def test_training_forward_takes_no_cache_and_is_unchanged() -> None:
    """The baseline path: no cache, positions from 0, the causal fast path of SDPA."""
    model = lm({}).model
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    loss = model(ids[:, :-1], ids[:, 1:])
    assert torch.isfinite(loss)
    from archaudit.model.context import ForwardContext

    ctx = ForwardContext(T=4, device=ids.device, position=model.position)
    assert ctx.start == 0 and ctx.mask(None).causal_only


class _HFIds:
    """What `HFCausalLM` reads of a tokenizer."""

    bos_token_id, eos_token_id = None, 0

    def decode(self, ids: list[int], **_: object) -> str:
        return "".join(chr(65 + i % 26) for i in ids)


@pytest.mark.parametrize("layout", [{}, {"num_key_value_heads": 2}])
def test_an_hf_model_decodes_through_its_cache_as_generate_does(layout: dict) -> None:
    """Issue 44: `eval` of an HF export or a GGUF recomputed the prefix at every step
    (`use_cache=False`). Its decoder keeps transformers' cache; the tokens equal the uncached
    path's and `generate`'s, token for token."""
    transformers = pytest.importorskip("transformers")
    from archaudit.evals.models import HFCausalLM

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=256, tie_word_embeddings=False, **layout,
    )  # fmt: skip
    peer = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for p in peer.parameters():
            p.mul_(8)  # peaked logits: a near-tie cannot decide the comparison
    model = HFCausalLM(peer, _HFIds(), name="peer")
    assert model.position_limit is None and model.decoder() is not None
    prompt = [(7 * i + 3) % 64 for i in range(12)]
    with torch.no_grad():
        cached, uncached = greedy_tokens(model, prompt), greedy_tokens(model, prompt, cache=False)
        tokens = [(next(cached), next(uncached)) for _ in range(16)]
        generated = peer.generate(
            torch.tensor([prompt]), do_sample=False, max_new_tokens=16, min_new_tokens=16,
            pad_token_id=0,
        )[0, len(prompt) :].tolist()  # fmt: skip
    assert [a for a, _ in tokens] == [b for _, b in tokens] == generated
    assert len(set(generated)) > 1, "a constant output would prove nothing"
