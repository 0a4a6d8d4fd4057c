import json
import os
import subprocess
import sys

import pytest

from archaudit.config import ModelConfig, Recipe
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
