"""Data parallelism on CPU (gloo): 2 ranks train what 1 process trains, under DDP and FSDP2
(also with hyper-connections, whose stream runs a block's branches rather than the block), only
rank 0 prints and writes, and a 2-rank checkpoint resumes on 1 rank."""

import json
import os
import subprocess
import sys

import pytest

from archaudit.config import ModelConfig, Recipe
from archaudit.mods import resolve_arm
from archaudit.rundir import CHECKPOINTS, METRICS, TRAIN_RESULT, checkpoint_dirs
from archaudit.train import train

MODEL = {"d_model": 32, "n_layers": 2, "n_heads": 2, "context_length": 32}
RECIPE = {
    "batch_tokens": 512, "corpus_chars": 100_000, "threads": 1, "steps": 12, "eval_every": 6,
    "checkpoint_every": 6, "grad_accumulation": 2,
}  # fmt: skip


def _torchrun(out, parallel: str, arm: str = "baseline") -> subprocess.CompletedProcess:
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        "-m", "archaudit", "train", "--json", "--out", str(out), "--arm", arm,
    ]  # fmt: skip
    sets = {
        **{f"model.{k}": v for k, v in MODEL.items()},
        **{f"recipe.{k}": v for k, v in RECIPE.items()},
    }
    for key, value in {**sets, "recipe.parallel": parallel}.items():
        cmd += ["--set", f"{key}={value}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, check=True, env=env, capture_output=True, text=True, timeout=900)


def _curve(run) -> list[float]:
    rows = [json.loads(line) for line in (run / METRICS).read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, len(rows) + 1))  # one writer, no repeats
    return [r["loss"] for r in rows]


def _single(out, arm: str = "baseline") -> list[float]:
    train(resolve_arm(arm).apply(ModelConfig(**MODEL)), Recipe(**RECIPE), out)
    return _curve(out)


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    return _single(tmp_path_factory.mktemp("single") / "run")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("parallel", "arm"),
    [("ddp", "baseline"), ("fsdp", "baseline"), ("fsdp", "hyper_connections_2")],
)
def test_two_ranks_train_what_one_process_trains(tmp_path, single, parallel, arm):
    if arm != "baseline":
        single = _single(tmp_path / "single", arm)
    done = _torchrun(tmp_path / parallel, parallel, arm)
    # Rank 0 alone prints: stdout is one JSON document (a second rank's would not parse).
    assert json.loads(done.stdout)["status"] == "ok"
    curve = _curve(tmp_path / parallel)
    assert len(curve) == 12
    assert max(abs(a - b) for a, b in zip(curve, single, strict=True)) < 1e-3


def test_a_two_rank_fsdp_checkpoint_resumes_on_one_rank(tmp_path, single):
    run = tmp_path / "fsdp"
    _torchrun(run, "fsdp")
    two_ranks = _curve(run)
    newest = checkpoint_dirs(run)[-1]
    assert newest.name.endswith("12") and (run / CHECKPOINTS).is_dir()
    for path in newest.rglob("*"):
        path.unlink()
    newest.rmdir()
    (run / TRAIN_RESULT).unlink()
    recipe = Recipe(**{**RECIPE, "parallel": "fsdp"})  # operational: the same run
    train(ModelConfig(**MODEL), recipe, run)  # one process, from the step-6 checkpoint
    resumed = _curve(run)
    assert resumed[:6] == two_ranks[:6]
    assert max(abs(a - b) for a, b in zip(resumed, single, strict=True)) < 1e-3
    assert max(abs(a - b) for a, b in zip(resumed[6:], two_ranks[6:], strict=True)) < 1e-3
