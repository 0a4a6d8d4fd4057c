"""Peak memory and time of held-out perplexity: archaudit's scorer against lm-evaluation-harness.

Each side runs in a fresh subprocess, so its peak resident memory (`os.wait4`'s ru_maxrss) is
its own: it loads the same model (SmolLM2-135M, 4-bit GGUF dequantised, on the CPU) and scores
the same text, the first `--tokens` tokens of tinyshakespeare, with lm-eval's rolling windows
at the model's length. archaudit runs `heldout_loss` at its defaults, its batches kept within
`scoring.LOGITS_BUDGET_BYTES` of logits; lm-eval runs `HFLM.loglikelihood_rolling` at
`--batch-size` (lm-eval's default, 1). The peak after loading is printed too: the scoring's
own share is the difference. Both sides' summed log-likelihoods are printed: they must agree.
Needs the `hf` and `lmeval` extras and ../shared/data.

    python benchmarks/eval_memory.py [--tokens 10000] [--batch-size 1] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # lm-eval's bars; read when tqdm is imported

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
GGUF = DATA / "models/smollm2-135m-instruct-q4/SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = DATA / "corpora/tinyshakespeare/input.txt"
SIDES = ("archaudit", "lm-eval")


def _peak_mb(rusage: resource.struct_rusage) -> float:
    return rusage.ru_maxrss / 1024  # kilobytes on Linux


def _score(side: str, tokens: int, batch_size: int) -> dict[str, float]:
    """In the child: load, then time one held-out evaluation of `tokens` tokens."""
    from archaudit.evals import load_scoring_model
    from archaudit.evals.heldout import heldout_loss

    model = load_scoring_model(GGUF)
    text = model.decode(model.encode(TEXT.read_text(encoding="utf-8")[: 8 * tokens])[:tokens])
    loaded = _peak_mb(resource.getrusage(resource.RUSAGE_SELF))
    start = time.perf_counter()
    if side == "archaudit":
        result = heldout_loss(model, text, token_budget=10 * tokens, show_progress=False)
        nats, scored = result.loss * result.tokens, result.tokens
    else:
        import logging

        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM

        logging.getLogger("lm_eval").setLevel(logging.ERROR)
        harness = HFLM(
            pretrained=model.model, tokenizer=model.tokenizer, batch_size=batch_size, device="cpu"
        )
        request = Instance("loglikelihood_rolling", doc={}, arguments=(text,), idx=0)
        (logprob,) = harness.loglikelihood_rolling([request], disable_tqdm=True)
        nats, scored = -logprob, len(harness.tok_encode(text))
    seconds = time.perf_counter() - start
    return {"loaded_mb": loaded, "seconds": seconds, "nats": nats, "tokens": scored}


def _run_child(side: str, args: argparse.Namespace) -> dict[str, float]:
    """One side in a fresh process; its peak RSS from the kernel's accounting of that child."""
    command = [sys.executable, __file__, "--child", side, "--tokens", str(args.tokens)]
    command += ["--batch-size", str(args.batch_size)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, rusage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        sys.exit(f"{side} failed with exit status {child.returncode}")
    return {**json.loads(output.decode().strip().splitlines()[-1]), "peak_mb": _peak_mb(rusage)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=1, help="lm-eval's batch size")
    parser.add_argument("--repeats", type=int, default=1, help="alternating runs; best time")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_score(args.child, args.tokens, args.batch_size)))
        return

    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    for _ in range(args.repeats):
        for side in SIDES:  # alternate: a shared machine's load changes under a benchmark
            runs[side].append(_run_child(side, args))
    print(f"held-out perplexity, {args.tokens} tokens of {TEXT.name}, model {GGUF.name}")
    for side in SIDES:
        peak = max(r["peak_mb"] for r in runs[side])
        loaded = max(r["loaded_mb"] for r in runs[side])
        best = min(r["seconds"] for r in runs[side])
        r = runs[side][0]
        print(
            f"  {side:10s} peak {peak / 1024:5.2f} GB (after loading {loaded / 1024:5.2f} GB)"
            f"  time {best:6.1f} s  {r['tokens']} tokens, {r['nats']:.3f} nats"
        )
    ours, theirs = (max(r["peak_mb"] for r in runs[s]) for s in SIDES)
    fast, slow = (min(r["seconds"] for r in runs[s]) for s in SIDES)
    print(f"  memory     archaudit / lm-eval {ours / theirs:.2f}x (goal <= 1)")
    print(f"  speed-up   {slow / fast:.2f}x")


if __name__ == "__main__":
    main()
