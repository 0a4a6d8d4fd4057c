"""Training-step time of every modification relative to the baseline.

One step = forward, backward and an AdamW update at d_model 128, 4 layers, context 128 and
1024 tokens per step (short_context: twice the sequences at half the length). Every arm's model
is built and warmed up first; then the arms run in interleaved rounds, each round in a new
shuffled order, and an arm's time is its median over rounds. Time is this process's CPU time
(`time.process_time`), not wall time, so on a shared machine the load of other processes does
not count; with one thread (the default) that is the step's compute time. Recipe arms train
the baseline model, so their ratio shows the measurement noise.

    python benchmarks/mods_overhead.py [--rounds 7] [--steps 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import torch

from archaudit.config import ModelConfig
from archaudit.model import build_model
from archaudit.mods import list_modifications, resolve_arm

SIZE = ModelConfig(vocab_size=256, context_length=128, d_model=128, n_layers=4, n_heads=4)
TOKENS_PER_STEP = 1024
GOAL = 1.5  # the bound on the step-time ratio for all but inherently costlier arms


def training_step(name: str) -> Callable[[], None]:
    """A closure running one training step of the arm's model on a fixed random batch."""
    cfg = resolve_arm(name).apply(SIZE)
    torch.manual_seed(0)
    model = build_model(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = torch.randint(
        0, cfg.vocab_size, (TOKENS_PER_STEP // cfg.context_length, cfg.context_length + 1)
    )

    def step() -> None:
        loss = model.loss(batch[:, :-1], batch[:, 1:])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def measure(names: list[str], rounds: int, steps: int) -> dict[str, float]:
    """Median seconds per step of each arm over interleaved, shuffled rounds."""
    step_of = {name: training_step(name) for name in names}
    for step in step_of.values():
        step()  # warm-up: first-call allocations and caches
    times: dict[str, list[float]] = {name: [] for name in names}
    order = list(names)
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            start = time.process_time()
            for _ in range(steps):
                step_of[name]()
            times[name].append((time.process_time() - start) / steps)
    return {name: statistics.median(samples) for name, samples in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=2, help="timed steps per arm and round")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    names = [mod.name for mod in list_modifications()]
    median = measure(names, args.rounds, args.steps)
    base = median["baseline"]
    print(
        f"# d_model={SIZE.d_model} n_layers={SIZE.n_layers} context={SIZE.context_length} "
        f"tokens/step={TOKENS_PER_STEP} threads={args.threads} rounds={args.rounds} "
        f"steps/round={args.steps}; median CPU time over interleaved rounds"
    )
    print(f"{'modification':<22} {'ms/step':>8} {'ratio':>6}")
    for name in sorted(names, key=lambda n: median[n], reverse=True):
        flag = f"  > {GOAL}x" if median[name] > GOAL * base else ""
        print(f"{name:<22} {1e3 * median[name]:8.1f} {median[name] / base:6.2f}{flag}")


if __name__ == "__main__":
    main()
