import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from archaudit.config import ModelConfig, Recipe
from archaudit.model.load import load_model
from archaudit.rundir import checkpoint_dirs
from archaudit.train import train
from archaudit.train.monitor import StabilityMonitor
from archaudit.train.optim import lr_at

MODEL = ModelConfig(d_model=32, n_layers=2, n_heads=2, context_length=32)
RECIPE = Recipe(
    steps=30, batch_tokens=256, lr=3e-3, corpus_chars=100_000, eval_every=10,
    checkpoint_every=10, threads=1,
)  # fmt: skip
OVERRIDES = [
    "model.d_model=32", "model.n_layers=2", "model.n_heads=2", "model.context_length=32",
    "recipe.batch_tokens=256", "recipe.corpus_chars=100000", "recipe.threads=1",
    "recipe.eval_every=10",
]  # fmt: skip


def losses(run) -> list[float]:
    return [json.loads(line)["loss"] for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_same_seed_is_bit_identical_and_seeds_differ(tmp_path):
    a = train(MODEL, RECIPE, tmp_path / "a", seed=1)
    b = train(MODEL, RECIPE, tmp_path / "b", seed=1)
    train(MODEL, RECIPE, tmp_path / "c", seed=2)
    assert losses(tmp_path / "a") == losses(tmp_path / "b")
    assert losses(tmp_path / "a") != losses(tmp_path / "c")
    assert a.status == "ok" and a.steps == 30 and a.final_loss < math.log(256)
    assert (a.final_loss, a.val_loss) == (b.final_loss, b.val_loss)


def test_default_data_order_is_fixed_and_optionally_varies_with_seed():
    from archaudit.train.loop.trainer import data_order_seed, derive_seed

    assert data_order_seed(RECIPE, 1) == data_order_seed(RECIPE, 2) == RECIPE.data_seed
    varied = Recipe(vary_data_order=True)
    assert data_order_seed(varied, 1) != data_order_seed(varied, 2)
    assert derive_seed(1, "init") != derive_seed(1, "dropout")


# 21 s: a real SIGKILL of a 400-step run; test_core_resume covers every interrupt phase in-process
@pytest.mark.slow
def test_killed_run_resumes_to_the_uninterrupted_curve(tmp_path):
    steps = 400
    cmd = [
        sys.executable,
        "-m",
        "archaudit.cli",
        "train",
        "--quiet",
        "--seed",
        "3",
        "--set",
        f"recipe.steps={steps}",
        "--set",
        "recipe.checkpoint_every=25",
    ]
    for o in OVERRIDES:
        cmd += ["--set", o]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    killed = tmp_path / "killed"
    proc = subprocess.Popen([*cmd, "--out", str(killed)], env=env)
    deadline = time.time() + 240
    while time.time() < deadline:
        metrics = killed / "metrics.jsonl"
        if metrics.is_file() and len(metrics.read_text().splitlines()) >= 60:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "train.json").exists(), "the run finished before it could be killed"
    assert checkpoint_dirs(killed), "no checkpoint was written before the kill"
    assert len(losses(killed)) < steps
    subprocess.run([*cmd, "--out", str(killed)], env=env, check=True)
    subprocess.run([*cmd, "--out", str(tmp_path / "whole")], env=env, check=True)
    assert losses(killed) == losses(tmp_path / "whole")
    assert len(losses(killed)) == steps


def test_forced_divergence_ends_cleanly_with_its_step(tmp_path):
    out = tmp_path / "div"
    cmd = [
        sys.executable,
        "-m",
        "archaudit.cli",
        "train",
        "--out",
        str(out),
        "--json",
        "--set",
        "recipe.lr=1e6",
        "--set",
        "recipe.warmup_frac=0",
        "--set",
        "recipe.steps=40",
        "--set",
        "model.init.scale_residual=false",
    ]
    for o in OVERRIDES:
        cmd += ["--set", o]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["status"] == "diverged"
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    diverged = [e for e in events if e["event"] == "diverged"]
    assert len(diverged) == 1
    stored = json.loads((out / "train.json").read_text())
    assert stored["diverged_step"] == diverged[0]["step"] == summary["steps"] + 1


def test_corrupted_checkpoint_falls_back_to_the_previous_one(tmp_path, capsys):
    out = tmp_path / "run"
    recipe = Recipe(**{**RECIPE.__dict__, "keep_checkpoints": 3})
    train(MODEL, recipe, out, seed=0)
    newest = checkpoint_dirs(out)[-1]
    state = newest / "model.safetensors"
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])  # truncate
    model, tok = load_model(out)
    assert "fails its checksum" in capsys.readouterr().err
    # The model came from the step-20 checkpoint: resuming from it re-creates step 30 exactly.
    (out / "train.json").unlink()
    before = losses(out)
    train(MODEL, recipe, out, seed=0)
    assert losses(out) == before
    assert isinstance(model, torch.nn.Module) and tok.vocab_size == 256


def test_lr_schedule_warms_up_then_decays_to_floor():
    recipe = Recipe(steps=100, lr=1.0, warmup_frac=0.1, min_lr_ratio=0.1)
    lrs = [lr_at(s, recipe) for s in range(100)]
    assert lrs[9] == pytest.approx(1.0) and lrs[0] == pytest.approx(0.1)
    assert all(a >= b for a, b in itertools.pairwise(lrs[9:]))
    assert lrs[-1] == pytest.approx(0.1)


def test_monitor_flags_spikes_and_a_rising_gradient_norm():
    mon = StabilityMonitor(rise_window=50)
    events = []
    for step in range(200):
        loss = 2.0 + 0.01 * math.sin(step) + (5.0 if step == 150 else 0.0)
        events += mon.observe(step, loss, 1.0 + 0.01 * math.cos(step))
    assert [(e["event"], e["metric"], e["step"]) for e in events] == [("spike", "loss", 150)]
    rising = [e for s in range(200) for e in mon.observe(200 + s, 2.0, 1.0 * 1.02**s)]
    # A flat history makes the first climbing values spikes too; the climb is reported once.
    assert [e["event"] for e in rising if e["event"] != "spike"] == ["grad_norm_rising"]
    restored = StabilityMonitor(rise_window=50)
    restored.load_state_dict(json.loads(json.dumps(mon.state_dict())))
    assert restored.observe(400, 50.0, 1.0) == mon.observe(400, 50.0, 1.0)
    assert mon.observe(401, float("nan"), 1.0)[0]["event"] == "diverged"


def test_a_finished_directory_reports_its_own_run_and_refuses_another(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "archaudit.cli", "train", "--out", str(out), "--json"]
    for o in [*OVERRIDES, "recipe.steps=6"]:
        cmd += ["--set", o]
    first = subprocess.run(cmd, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    stored = (out / "train.json").read_text()

    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout == first.stdout
    assert again.stderr.startswith("already finished:")

    for change, named in (
        (["--set", "model.attention.qk_norm=true"], "model.attention.qk_norm: false → true"),
        (["--seed", "1", "--set", "recipe.lr=1e-3"], "recipe.lr: 0.003 → 0.001; seed: 0 → 1"),
    ):
        other = subprocess.run([*cmd, *change], capture_output=True, text=True)
        assert other.returncode == 2 and other.stdout == ""
        assert len(other.stderr.strip().splitlines()) == 1 and named in other.stderr, other.stderr
    assert (out / "train.json").read_text() == stored
