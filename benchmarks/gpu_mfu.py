"""Model FLOPs utilisation (MFU) of archaudit's training step, baseline and attention-output arms.

1. The matmul peak: the best of a few timed square matmuls in the training precision (bf16 on
   CUDA; on CPU, fp32, what `precision = "auto"` trains in there).
2. For each arm: `archaudit.train.train` itself (the real loop: autocast, SDPA, fused AdamW,
   clipping, logging) for a few steps on the embedded corpus; tokens/s is the median of the
   per-step rates after the warm-up steps, and MFU = training FLOPs per token · tokens/s / peak
   (FLOPs per token: 6·N + 12·L·T·d_attn, PaLM appendix B).

On CUDA the default size is ~125M parameters at context 1024 (d_model 768, 18 layers, byte
vocabulary: the tied head is small, so depth makes up GPT-2 small's embedding parameters).
Without CUDA it runs a tiny size, for shape and logic only.

    .venv/bin/python benchmarks/gpu_mfu.py                 # whatever this machine has
    .venv/bin/python benchmarks/gpu_mfu.py --compile --arms baseline softpick
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from archaudit.config import ModelConfig, Recipe
from archaudit.mods import resolve_arm
from archaudit.train import train

ATTENTION_OUTPUT_ARMS = ("softpick", "ssmax", "gated_attn", "sigmoid_attn", "diff_attn")
SIZES = {
    "gpu": {"model": dict(d_model=768, n_layers=18, n_heads=12, context_length=1024),
            "batch_tokens": 16 * 1024, "steps": 30, "warmup": 10, "matmul": 8192,
            "corpus_chars": 3_000_000},
    "tiny": {"model": dict(d_model=64, n_layers=2, n_heads=4, context_length=64),
             "batch_tokens": 16 * 64, "steps": 8, "warmup": 3, "matmul": 512,
             "corpus_chars": 100_000},
}  # fmt: skip


def matmul_peak(device: torch.device, dtype: torch.dtype, n: int) -> float:
    """FLOP/s of the best of 10 timed n×n×n matmuls, after warm-up."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for i in range(13):
        _sync(device)
        t0 = time.perf_counter()
        a @ b
        _sync(device)
        if i >= 3:
            best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def measure_arm(arm: str, size: dict, device: str, compile_: bool, folder: Path) -> dict:
    model = resolve_arm(arm).apply(ModelConfig(**size["model"]))
    recipe = Recipe(
        steps=size["steps"], batch_tokens=size["batch_tokens"], corpus_chars=size["corpus_chars"],
        device=device, compile=compile_, eval_every=10_000, checkpoint_every=10_000,
    )  # fmt: skip
    result = train(model, recipe, folder / arm)
    rows = [json.loads(line) for line in (folder / arm / "metrics.jsonl").read_text().splitlines()]
    rates = [row["tokens_per_s"] for row in rows[size["warmup"] :]]
    tokens_per_s = statistics.median(rates)
    return {
        "arm": arm,
        "params": result.params,
        "tokens_per_s": tokens_per_s,
        "flops_per_s": result.flops_per_token * tokens_per_s,
        "status": result.status,
    }


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", nargs="+", default=["baseline", *ATTENTION_OUTPUT_ARMS])
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--size", choices=sorted(SIZES), help="default: gpu on CUDA, else tiny")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    size = SIZES[args.size or ("gpu" if cuda else "tiny")]
    device = torch.device("cuda" if cuda else "cpu")
    dtype = torch.bfloat16 if cuda else torch.float32
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
    peak = matmul_peak(device, dtype, size["matmul"])
    name = torch.cuda.get_device_name() if cuda else "CPU"
    unit, scale = ("TFLOP/s", 1e12) if cuda else ("GFLOP/s", 1e9)
    print(f"device: {name}; {str(dtype)[6:]} matmul peak {peak / scale:.1f} {unit} (measured)")
    print(f"{'arm':<18} {'params':>12} {'tokens/s':>12} {unit:>9} {'MFU':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for arm in args.arms:
            row = measure_arm(arm, size, device.type, args.compile, Path(tmp))
            mfu = row["flops_per_s"] / peak
            print(
                f"{row['arm']:<18} {row['params']:>12,} {row['tokens_per_s']:>12,.0f} "
                f"{row['flops_per_s'] / scale:>9.2f} {mfu:>6.1%}"
                + ("" if row["status"] == "ok" else f"  ({row['status']})")
            )


if __name__ == "__main__":
    main()
