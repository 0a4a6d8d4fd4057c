import json
import os
import subprocess
import sys
import textwrap

import pytest

from archaudit.config import ModelConfig, Recipe
from archaudit.rundir import METRICS, checkpoint_dirs, checkpoint_step
from archaudit.train import train

OVERRIDES = [
    "model.d_model=32", "model.n_layers=2", "model.n_heads=2", "model.context_length=32",
    "recipe.batch_tokens=512", "recipe.corpus_chars=100000", "recipe.threads=1",
    "recipe.steps=12", "recipe.eval_every=6",
]  # fmt: skip


@pytest.mark.slow
def test_torchrun_two_cpu_ranks_match_one_process(tmp_path):
    """DDP over gloo trains on the same global batches as one process: curves agree to fp32
    reduction-order noise."""
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "archaudit.cli",
        "train",
        "--quiet",
        "--out",
        str(tmp_path / "ddp"),
    ]
    for o in OVERRIDES:
        cmd += ["--set", o]
    subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600)
    single = train(
        ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=32),
        Recipe(batch_tokens=512, corpus_chars=100_000, threads=1, steps=12, eval_every=6),
        tmp_path / "single",
    )
    rows = [json.loads(x) for x in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    ref = [json.loads(x) for x in (tmp_path / "single" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 13))
    assert max(abs(a["loss"] - b["loss"]) for a, b in zip(rows, ref, strict=True)) < 1e-3
    assert single.status == "ok"


@pytest.mark.slow
def test_a_signal_on_one_rank_stops_every_rank_after_the_same_step(tmp_path):
    """SIGTERM reaching rank 1 alone, during step 6's validation: the all-reduce of step 7 tells
    every rank, all stop after step 7, rank 0 saves it, and the resumed run equals an
    uninterrupted two-rank run exactly."""
    script = tmp_path / "sigterm_on_rank_1.py"
    script.write_text(
        textwrap.dedent("""
            import os, signal
            from archaudit.cli import main
            from archaudit.train.callbacks import validation as val
            real = val.validation_loss
            def validation(*args, **kwargs):
                if os.environ["RANK"] == "1":
                    os.kill(os.getpid(), signal.SIGTERM)
                return real(*args, **kwargs)
            val.validation_loss = validation
            main()
        """)
    )
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    args = ["train", "--quiet", *(a for o in OVERRIDES for a in ("--set", o))]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cut, whole = tmp_path / "cut", tmp_path / "whole"
    stopped = subprocess.run(
        [*torchrun, str(script), *args, "--out", str(cut)], env=env, timeout=600
    )
    assert stopped.returncode != 0

    def curve(run):
        rows = [json.loads(x) for x in (run / METRICS).read_text().splitlines()]
        return [{k: v for k, v in r.items() if k != "tokens_per_s"} for r in rows]

    assert [checkpoint_step(c) for c in checkpoint_dirs(cut)] == [7] and len(curve(cut)) == 7
    for out in (cut, whole):
        command = [*torchrun, "-m", "archaudit.cli", *args, "--out", str(out)]
        subprocess.run(command, check=True, env=env, timeout=600)
    assert curve(cut) == curve(whole)
