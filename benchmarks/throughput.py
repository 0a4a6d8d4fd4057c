"""Training throughput of the baseline against x-transformers, configured to match.

Both models: d=256, 4 layers, 4 heads, context 256, pre-norm RMSNorm, rotary embeddings, a
SiLU-gated feed-forward of the same hidden width (688), no biases, untied head. Each trains
with AdamW under bf16 autocast (fp32 master weights) on the same random batches, alternating
in one process so that both see the same machine state. Prints tokens/s of each, their ratio,
achieved GFLOP/s (PaLM's 6N + 12·L·T·d per token) and its fraction of a bf16 matmul peak
measured in the same run.

    python benchmarks/throughput.py [--rounds 5] [--steps 5] [--compile] [--device cuda]

`--signals` instead measures what logging the instability signals costs the trainer
(docs/stability.md): whole `train` calls of the tiny preset with `recipe.log_signals` on and off,
alternating in one process, and the ratio of their throughputs (wall time per token, validation
included).

    python benchmarks/throughput.py --signals [--rounds 3] [--steps 60] [--eval-every 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from archaudit.config import ModelConfig, Recipe, build
from archaudit.model import build_model, count_parameters, training_flops_per_token
from archaudit.presets import preset
from archaudit.train.optim import make_optimizer

D, LAYERS, HEADS, T, BATCH, VOCAB = 256, 4, 4, 256, 16, 256


def ours() -> torch.nn.Module:
    return build_model(
        ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS, context_length=T)
    )


class Peer(torch.nn.Module):
    """x-transformers with the baseline's choices; `forward(x, targets)` returns the loss."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        from x_transformers import Decoder, TransformerWrapper

        self.net = TransformerWrapper(
            num_tokens=VOCAB,
            max_seq_len=T,
            use_abs_pos_emb=False,
            attn_layers=Decoder(
                dim=D,
                depth=LAYERS,
                heads=HEADS,
                rotary_pos_emb=True,
                use_rmsnorm=True,
                ff_glu=True,
                ff_swish=True,
                ff_no_bias=True,
                ff_mult=hidden / D,
                attn_flash=True,
            ),
        )

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.net(x)
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def matmul_peak(device: torch.device, n: int, repeats: int = 10) -> float:
    """bf16 matmul FLOP/s on an n×n×n product (best of `repeats`)."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    best = float("inf")
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed_steps(model, opt, batches, device) -> float:  # type: ignore[no-untyped-def]
    sync(device)
    t0 = time.perf_counter()
    for x, y in batches:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = model(x, targets=y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    sync(device)
    return time.perf_counter() - t0


def signal_overhead(rounds: int, steps: int, eval_every: int, device: str) -> None:
    """Tokens/s of the tiny preset's training with the signals logged and without."""
    from archaudit.train import train

    tables = preset("tiny")
    model = build(ModelConfig, tables["model"], section="model")
    recipe = build(Recipe, tables["recipe"], section="recipe")
    recipe = dataclasses.replace(
        recipe, steps=steps, eval_every=eval_every, checkpoint_every=steps, device=device
    )
    seconds: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        train(model, recipe, Path(tmp) / "warm-up")  # prepares the corpus once
        for r in range(rounds):
            for on in (True, False):
                t0 = time.perf_counter()
                train(model, dataclasses.replace(recipe, log_signals=on), Path(tmp) / f"{r}-{on}")
                seconds[on].append(time.perf_counter() - t0)
    tokens = steps * recipe.batch_tokens
    tps = {on: tokens / statistics.median(s) for on, s in seconds.items()}
    print(f"device {device}, tiny preset, {steps} steps, validation every {eval_every}")
    print(f"tokens/s with signals {tps[True]:,.0f}, without {tps[False]:,.0f}")
    print(f"ratio with / without signals: {tps[True] / tps[False]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5, help="steps per model per round")
    parser.add_argument("--signals", action="store_true", help="the signal logging overhead")
    parser.add_argument("--eval-every", type=int, default=20, help="with --signals")
    parser.add_argument("--compile", action="store_true", help="also compare compiled models")
    parser.add_argument("--same-optimizer", action="store_true", help="fused AdamW for both")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    if args.signals:
        signal_overhead(args.rounds, args.steps, args.eval_every, args.device)
        return
    device = torch.device(args.device)
    torch.manual_seed(0)

    base = ours()
    hidden = base.blocks[0].mlp.w1.out_features
    models = {"archaudit": base.to(device), "x-transformers": Peer(hidden).to(device)}
    if args.compile:
        models["archaudit (compiled)"] = torch.compile(ours().to(device))
        models["x-transformers (compiled)"] = torch.compile(Peer(hidden).to(device))
    # Each model with the optimizer its users get: archaudit's trainer builds a fused AdamW
    # (make_optimizer); x-transformers leaves it to the user, whose default is torch's AdamW.
    # --same-optimizer gives both archaudit's, to isolate the model's own speed.
    opts = {
        name: make_optimizer(m, Recipe(lr=1e-4))
        if name.startswith("archaudit") or args.same_optimizer
        else torch.optim.AdamW(m.parameters(), lr=1e-4)
        for name, m in models.items()
    }
    n_params = {name: count_parameters(m) for name, m in models.items()}
    batches = [
        (torch.randint(0, VOCAB, (BATCH, T), device=device),
         torch.randint(0, VOCAB, (BATCH, T), device=device))
        for _ in range(args.steps)
    ]  # fmt: skip
    for name, model in models.items():  # warm-up: allocation, autotuning, compilation
        timed_steps(model, opts[name], batches[:2], device)

    seconds: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            seconds[name].append(timed_steps(model, opts[name], batches, device))
    peak = matmul_peak(device, 8192 if device.type == "cuda" else 2048)

    tokens = args.steps * BATCH * T
    cfg = base.cfg
    tps = {name: tokens / statistics.median(s) for name, s in seconds.items()}
    print(f"device {device}, torch {torch.__version__}, threads {torch.get_num_threads()}")
    print(f"bf16 matmul peak measured: {peak / 1e9:,.0f} GFLOP/s")
    print(f"{'model':28s} {'params':>10s} {'tokens/s':>12s} {'GFLOP/s':>9s} {'of peak':>8s}")
    for name in models:
        flops = training_flops_per_token(cfg, n_params[name]) * tps[name]
        print(
            f"{name:28s} {n_params[name]:>10,d} {tps[name]:>12,.0f} {flops / 1e9:>9,.1f}"
            f" {flops / peak:>8.1%}"
        )
    print(
        f"ratio archaudit / x-transformers (eager): {tps['archaudit'] / tps['x-transformers']:.2f}"
    )
    if args.compile:
        peer_c = tps["x-transformers (compiled)"]
        print(
            f"ratio archaudit (compiled) / x-transformers (compiled): "
            f"{tps['archaudit (compiled)'] / peer_c:.2f}"
        )
        print(
            f"ratio archaudit (eager) / x-transformers (compiled): {tps['archaudit'] / peer_c:.2f}"
        )


if __name__ == "__main__":
    main()
