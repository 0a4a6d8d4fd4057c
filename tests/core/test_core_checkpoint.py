"""Checkpoints that cannot run code: weights in safetensors, optimizer and RNG state readable by
torch.load(weights_only=True), sha256 sums that `sha256sum -c` accepts. A pickle payload
planted in any file, or archaudit 0.1's pickled `state.pt`, is refused with one line and never
executed."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from archaudit.config import ModelConfig, Recipe
from archaudit.errors import DataError
from archaudit.model.load import load_model
from archaudit.rundir import (
    CHECKPOINT_META,
    CHECKSUMS,
    TRAIN_STATE,
    WEIGHTS,
    checkpoint_dirs,
)
from archaudit.train import train

MODEL = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=32)
RECIPE = Recipe(
    steps=6, batch_tokens=256, corpus_chars=100_000, eval_every=6, eval_batches=1,
    checkpoint_every=3, threads=1,
)  # fmt: skip


class Payload:
    """Unpickling this creates `marker`: proof that a load ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("ckpt") / "run"
    train(MODEL, RECIPE, run, seed=0)
    return run


@pytest.fixture
def run(trained: Path, tmp_path: Path) -> Path:
    """A fresh copy of the trained run, unfinished (so `train` resumes it)."""
    copy = tmp_path / "run"
    shutil.copytree(trained, copy)
    (copy / "train.json").unlink()
    return copy


def plant(ckpt: Path, name: str, marker: Path) -> None:
    """Replace `name` by a pickle payload and update the sums, as an attacker would."""
    torch.save({"optimizer": Payload(marker)}, ckpt / name)
    sums = [line.split("  ", 1) for line in (ckpt / CHECKSUMS).read_text().splitlines()]
    fresh = {n: hashlib.sha256((ckpt / n).read_bytes()).hexdigest() for _, n in sums}
    (ckpt / CHECKSUMS).write_text("".join(f"{fresh[n]}  {n}\n" for _, n in sums))


def test_the_format_is_readable_without_unpickling(trained: Path):
    ckpt = checkpoint_dirs(trained)[-1]
    assert sorted(p.name for p in ckpt.iterdir()) == sorted(
        [WEIGHTS, TRAIN_STATE, CHECKPOINT_META, CHECKSUMS]
    )
    weights = load_file(ckpt / WEIGHTS)
    model, _ = load_model(trained)
    state = model.state_dict()
    assert weights.keys() <= state.keys()
    assert all(torch.equal(weights[k], state[k]) for k in weights)
    state = torch.load(ckpt / TRAIN_STATE, weights_only=True)
    assert {"optimizer", "rng"} <= state.keys()
    if shutil.which("sha256sum"):
        subprocess.run(["sha256sum", "--quiet", "-c", CHECKSUMS], cwd=ckpt, check=True)


@pytest.mark.parametrize("name", [TRAIN_STATE, WEIGHTS])
def test_a_planted_pickle_payload_is_refused_and_never_run(run: Path, tmp_path: Path, name: str):
    marker = tmp_path / "payload-ran"
    plant(checkpoint_dirs(run)[-1], name, marker)
    with pytest.raises(DataError, match=r"refused|not a safetensors file") as err:
        train(MODEL, RECIPE, run, seed=0)
    assert "\n" not in str(err.value)
    if name == WEIGHTS:
        with pytest.raises(DataError, match="not a safetensors file"):
            load_model(run)
    assert not marker.exists(), "the payload ran"
    live = shutil.copy(checkpoint_dirs(run)[-1] / name, tmp_path / "payload.pt")
    torch.load(live, weights_only=False)  # what archaudit 0.1 did with its checkpoints
    assert marker.exists(), "the planted payload is live"


def test_a_checkpoint_of_unknown_files_is_never_unpickled(run: Path, tmp_path: Path):
    """A folder holding only a pickle (archaudit 0.1's `state.pt`, or a planted one) is no
    checkpoint: nothing in it is opened, and with no other checkpoint there is none to load."""
    marker = tmp_path / "payload-ran"
    for ckpt in checkpoint_dirs(run):
        for child in ckpt.iterdir():
            child.unlink()
    ckpt = checkpoint_dirs(run)[-1]
    torch.save({"model": Payload(marker)}, ckpt / "state.pt")
    (ckpt / "state.sha256").write_text(hashlib.sha256((ckpt / "state.pt").read_bytes()).hexdigest())
    with pytest.raises(DataError, match="no valid checkpoint"):
        load_model(run)
    proc = subprocess.run(
        [sys.executable, "-m", "archaudit.cli", "eval", str(run), "--limit", "1", "--quiet"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "no valid checkpoint" in proc.stderr.splitlines()[-1]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert not marker.exists(), "the payload ran"
    torch.load(ckpt / "state.pt", weights_only=False)  # what archaudit 0.1 did
    assert marker.exists(), "the planted payload is live"
