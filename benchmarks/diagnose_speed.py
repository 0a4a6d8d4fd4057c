"""Gradient-bottleneck speed on SmolLM2-135M (4-bit GGUF dequantised to float32, on the CPU).

Reports the basis time (thin QR of the 49152×576 unembedding, once per model), the bottleneck's
tokens/s over `--tokens` predictions, and the forward pass alone on the same rows, so the
projection's own cost shows as the ratio. Best of `--repeats`: the machine may be shared.
Needs the `hf` extra and ../shared/data.

    python benchmarks/diagnose_speed.py [--tokens 2048] [--window 256] [--batch-size 8]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from archaudit.diagnose import column_basis, gradient_bottleneck, view_of
from archaudit.diagnose.windows import read_text, token_windows
from archaudit.progress import set_quiet

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
GGUF = DATA / "models/smollm2-135m-instruct-q4/SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = DATA / "corpora/tinyshakespeare/input.txt"


def best(seconds: list[float]) -> float:
    return min(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", type=Path, default=GGUF)
    args = parser.parse_args()
    set_quiet(True)

    view = view_of(args.model)
    rows = token_windows(view, read_text(TEXT), tokens=args.tokens, window=args.window)
    n = rows.shape[0] * (rows.shape[1] - 1)
    basis_s, bottleneck_s, forward_s = [], [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        column_basis(view.unembedding())
        basis_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = gradient_bottleneck(view, rows, batch_size=args.batch_size)
        bottleneck_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        with torch.no_grad():
            for i in range(0, rows.shape[0], args.batch_size):
                view.logits(rows[i : i + args.batch_size, :-1])
        forward_s.append(time.perf_counter() - start)
    print(f"model {view.name}: {n} tokens, {torch.get_num_threads()} torch threads")
    print(f"basis (thin QR of {result.vocab_size}x{result.d_model}): {best(basis_s):.2f} s")
    print(f"bottleneck: {n / best(bottleneck_s):.0f} tokens/s (basis included)")
    print(f"forward only: {n / best(forward_s):.0f} tokens/s")
    print(f"bottleneck / forward time: {best(bottleneck_s) / best(forward_s):.2f}")
    print(
        f"suppressed fraction mean {result.suppressed_fraction.mean:.4f}, "
        f"cosine mean {result.cosine.mean:.4f}"
    )


if __name__ == "__main__":
    main()
