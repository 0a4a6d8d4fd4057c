"""Issue 36, must-show 5: greedy key-value retrieval with and without the KV cache, and
Hugging Face `generate` (with its cache) on a stock Llama of the same shape as a peer.

Each prompt is the Lost in the Middle kv prompt with `--keys` uuid pairs (5: the small-model
setting), byte-level tokens; every decoder produces exactly `--new-tokens` tokens (no stop),
and the cached and uncached outputs must be equal token for token. Weights are random: the
speed of decoding does not depend on what the weights learned.

    PYTHONPATH=src python benchmarks/kv_cache.py                  # preset small, 5 keys
    PYTHONPATH=src python benchmarks/kv_cache.py --keys 75 --preset base --prompts 2

Issue 44: `eval` of a Hugging Face folder or a GGUF decoded without a cache (15.3x slower than
`generate` on SmolLM2). `hf_export` decodes the stock Llama peer as `eval` loads an export
(`HFCausalLM`), `--gguf FILE` a GGUF as `eval` loads it; each reports its time over
transformers' `generate` on the same weights in the same run, and whether the tokens equal
`generate`'s and the uncached path's:

    PYTHONPATH=src python benchmarks/kv_cache.py --prompts 2 --new-tokens 32 --threads 2 \
        --gguf shared/data/models/smollm2-135m-instruct-q4/SmolLM2-135M-Instruct.Q4_1.gguf
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch

from archaudit.config import ModelConfig, build
from archaudit.data.tokenizers import load_tokenizer
from archaudit.evals.generation import greedy_tokens
from archaudit.evals.models import ArchauditLM
from archaudit.evals.retrieval import kv_prompt
from archaudit.model import build_model
from archaudit.presets import MODEL_PRESETS


def uuid(rng: random.Random) -> str:
    digits = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return "-".join(digits[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))


def prompts(keys: int, count: int) -> list[str]:
    rng = random.Random(0)
    out = []
    for _ in range(count):
        records = [(uuid(rng), uuid(rng)) for _ in range(keys)]
        out.append(kv_prompt(records, records[rng.randrange(keys)][0]))
    return out


def timed(run, repeats: int) -> tuple[float, list]:
    """(best seconds of `repeats`, the last result)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def hf_peer(cfg: ModelConfig):
    """transformers' Llama with the baseline's shape (RMSNorm, RoPE, SwiGLU, no biases)."""
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.kv_heads,
        intermediate_size=build_model(cfg).blocks[0].mlp.w1.out_features,
        max_position_embeddings=4096, rms_norm_eps=cfg.norm.eps, tie_word_embeddings=False,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config).eval()


def hf_path(model, encoded: list[list[int]], new_tokens: int, repeats: int) -> dict:
    """An `HFCausalLM` decoded greedily as `eval` decodes it (through its cache, and without),
    against `generate` on its own weights: time ratio and token equality."""
    from archaudit.evals.generation import greedy_tokens

    def decode(cache: bool) -> list[list[int]]:
        with torch.no_grad():
            runs = [greedy_tokens(model, ids, cache=cache) for ids in encoded]
            return [[next(run) for _ in range(new_tokens)] for run in runs]

    def generate() -> list[list[int]]:
        options = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
        pad = model.tokenizer.eos_token_id or 0
        with torch.no_grad():
            return [
                model.model.generate(torch.tensor([ids]), pad_token_id=pad, **options)[
                    0, len(ids) :
                ].tolist()
                for ids in encoded
            ]

    eval_s, cached = timed(lambda: decode(True), repeats)
    hf_s, generated = timed(generate, repeats)
    uncached_s, uncached = timed(lambda: decode(False), 1)
    return {
        "eval_s": eval_s,
        "generate_s": hf_s,
        "uncached_s": uncached_s,
        "eval_time_over_generate": eval_s / hf_s,
        "uncached_time_over_generate": uncached_s / hf_s,
        "tokens_equal_generate": cached == generated,
        "tokens_equal_uncached": cached == uncached,
    }


class _ByteIds:
    """The byte tokenizer's ids with the attributes `HFCausalLM` reads."""

    bos_token_id, eos_token_id = None, 0

    def decode(self, ids: list[int], **_: object) -> str:
        return bytes(i % 256 for i in ids).decode(errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--keys", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--gguf", default="", help="A GGUF file, decoded as `eval` loads it.")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = build(ModelConfig, MODEL_PRESETS[args.preset], section="model")
    model = ArchauditLM(build_model(cfg), load_tokenizer("byte"))
    texts = prompts(args.keys, args.prompts)
    encoded = [model.encode(t) for t in texts]

    def decode(cache: bool) -> list[list[int]]:
        with torch.no_grad():
            runs = [greedy_tokens(model, ids, cache=cache) for ids in encoded]
            return [[next(run) for _ in range(args.new_tokens)] for run in runs]

    peer = hf_peer(cfg)

    def hf_generate() -> int:
        options = dict(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens)
        with torch.no_grad():
            for ids in encoded:
                peer.generate(torch.tensor([ids]), do_sample=False, pad_token_id=0, **options)
        return 0

    cached_s, cached = timed(lambda: decode(True), args.repeats)
    uncached_s, uncached = timed(lambda: decode(False), args.repeats)
    hf_s, _ = timed(hf_generate, args.repeats)
    tokens = args.prompts * args.new_tokens
    result = {
        "preset": args.preset,
        "keys": args.keys,
        "prompt_tokens": sum(map(len, encoded)) // len(encoded),
        "new_tokens": tokens,
        "threads": args.threads,
        "equal_token_for_token": cached == uncached,
        "tokens_per_s": {
            "cached": tokens / cached_s,
            "uncached": tokens / uncached_s,
            "hf_generate": tokens / hf_s,
        },
        "speedup_cached_over_uncached": uncached_s / cached_s,
        "time_over_hf_generate": {"cached": cached_s / hf_s, "uncached": uncached_s / hf_s},
    }
    from archaudit.evals.models import HFCausalLM, load_scoring_model

    result["hf_export"] = hf_path(
        HFCausalLM(peer, _ByteIds(), name="llama-peer"), encoded, args.new_tokens, args.repeats
    )
    if args.gguf:
        gguf = load_scoring_model(args.gguf, device="cpu")
        ids = [gguf.encode(t) for t in texts]
        result["gguf"] = hf_path(gguf, ids, args.new_tokens, args.repeats) | {"file": args.gguf}
    print(json.dumps(result, indent=1))
    if not result["equal_token_for_token"]:
        raise SystemExit("cached and uncached decoding differ")


if __name__ == "__main__":
    main()
