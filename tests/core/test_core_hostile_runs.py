"""Issue 23, "written where it must not be": `train` never writes into a folder that is not one
of its runs, never through a link out of the run, and never resumes a checkpoint whose records
disagree on its step (nor truncates the run's logs before the resume is validated)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
import torch

from archaudit.config import ModelConfig, Recipe
from archaudit.errors import ConfigError, DataError
from archaudit.rundir import (
    CHECKPOINT_META,
    CHECKPOINTS,
    CHECKSUMS,
    ENV,
    METRICS,
    TRAIN_STATE,
    WEIGHTS,
    checkpoint_dirs,
)
from archaudit.train import train
from archaudit.train.callbacks import LogRows

MODEL = ModelConfig(d_model=32, n_layers=1, n_heads=2, context_length=32)
RECIPE = Recipe(
    steps=6, batch_tokens=256, corpus_chars=100_000, eval_every=3, eval_batches=1,
    checkpoint_every=3, threads=1,
)  # fmt: skip


@pytest.fixture(autouse=True)
def _keep_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def stop_after(step: int):
    """A metrics hook that fails once `step` is logged: the run stops with that checkpoint."""

    def hook(row: dict) -> None:
        if row["step"] > step:
            raise RuntimeError("stopped by the test")

    return hook


@pytest.fixture
def half_run(tmp_path: Path) -> Path:
    """A run stopped after step 3's checkpoint (step 4 fails in a hook)."""
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="stopped by the test"):
        train(MODEL, RECIPE, out, callbacks=(LogRows(stop_after(3)),))
    assert [p.name for p in checkpoint_dirs(out)] == ["step-000003"]
    return out


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_train_refuses_a_non_empty_folder_that_is_not_a_run(tmp_path: Path):
    out = tmp_path / "mine"
    (out / CHECKPOINTS / "step-000000").mkdir(parents=True)
    (out / CHECKPOINTS / "step-000000" / "precious.bin").write_bytes(b"\x00keep me")
    (out / ENV).write_text('{"mine": true}\n')
    (out / METRICS).write_text('{"step": 1, "mine": true}\n')
    before = tree(out)
    with pytest.raises(DataError, match=r"mine is a non-empty folder that is not a run"):
        train(MODEL, RECIPE, out)
    assert tree(out) == before, "nothing in the user's folder changed"


def test_train_refuses_an_out_that_is_a_file(tmp_path: Path):
    out = tmp_path / "notes.txt"
    out.write_text("mine\n")
    with pytest.raises(DataError, match=r"notes.txt is a file, not a run directory"):
        train(MODEL, RECIPE, out)
    assert out.read_text() == "mine\n"


def test_train_never_follows_a_checkpoint_link_out_of_the_run(half_run: Path, tmp_path: Path):
    outside = tmp_path / "elsewhere"
    (outside / "step-000001").mkdir(parents=True)
    (outside / "step-000001" / "data").write_text("not the run's")
    (half_run / CHECKPOINTS).rename(tmp_path / "moved")
    (half_run / CHECKPOINTS).symlink_to(outside)
    before = tree(outside)
    with pytest.raises(DataError, match=r"checkpoint is a link to .*elsewhere, outside the run"):
        train(MODEL, RECIPE, half_run)
    assert tree(outside) == before, "nothing was written or deleted through the link"


def test_a_log_linked_out_of_the_run_is_refused(half_run: Path, tmp_path: Path):
    outside = tmp_path / "their.jsonl"
    outside.write_text("theirs\n")
    (half_run / METRICS).unlink()
    (half_run / METRICS).symlink_to(outside)
    with pytest.raises(DataError, match=r"metrics.jsonl is a link"):
        train(MODEL, RECIPE, half_run)
    assert outside.read_text() == "theirs\n"


def rewrite_meta_step(ckpt: Path, step: int) -> None:
    """Edit meta.json's step and recompute SHA256SUMS, as a careful hand edit would."""
    meta = json.loads((ckpt / CHECKPOINT_META).read_text())
    (ckpt / CHECKPOINT_META).write_text(json.dumps({**meta, "step": step}))
    rewrite_sums(ckpt)


@pytest.mark.parametrize("step", [1, -5])
def test_a_checkpoint_whose_meta_disagrees_with_its_folder_is_refused(half_run: Path, step: int):
    rewrite_meta_step(checkpoint_dirs(half_run)[-1], step)
    log = (half_run / METRICS).read_text()
    with pytest.raises(DataError, match=rf"meta.json says step {step} but the folder is step 3"):
        train(MODEL, RECIPE, half_run)
    assert (half_run / METRICS).read_text() == log, "the log is not truncated before validation"


def test_a_checkpoint_whose_train_state_disagrees_is_refused(half_run: Path):
    ckpt = checkpoint_dirs(half_run)[-1]
    state = torch.load(ckpt / TRAIN_STATE, weights_only=True)
    torch.save({**state, "step": 2}, ckpt / TRAIN_STATE)
    rewrite_meta_step(ckpt, 3)  # sums again, for the edited train state
    with pytest.raises(DataError, match=r"train_state.pt says step 2 but the folder is step 3"):
        train(MODEL, RECIPE, half_run)


@pytest.mark.parametrize("garbage", [b"\xff\xfe not json", b"[1, 2]", b'{"format": 2}'])
def test_garbage_meta_is_one_named_error(half_run: Path, garbage: bytes):
    ckpt = checkpoint_dirs(half_run)[-1]
    (ckpt / CHECKPOINT_META).write_bytes(garbage)
    rewrite_sums(ckpt)
    with pytest.raises(DataError, match=r"meta.json"):
        train(MODEL, RECIPE, half_run)


def rewrite_sums(ckpt: Path) -> None:
    sums = "".join(
        f"{hashlib.sha256((ckpt / name).read_bytes()).hexdigest()}  {name}\n"
        for name in (WEIGHTS, TRAIN_STATE, CHECKPOINT_META)
    )
    (ckpt / CHECKSUMS).write_text(sums)


def test_garbage_train_state_and_sums_are_one_named_error(half_run: Path):
    ckpt = checkpoint_dirs(half_run)[-1]
    (ckpt / TRAIN_STATE).write_bytes(b"PK\x03\x04 not a torch file")
    rewrite_sums(ckpt)
    with pytest.raises(DataError, match=r"train_state.pt is not a training state"):
        train(MODEL, RECIPE, half_run)
    (ckpt / CHECKSUMS).write_bytes(b"\xff\xfe\x00")  # not UTF-8: incomplete, not a crash
    assert train(MODEL, RECIPE, half_run).steps == RECIPE.steps  # retrained from step 0


def test_a_resumed_run_ends_like_an_uninterrupted_one_and_cleans_partial_folders(
    half_run: Path, tmp_path: Path
):
    partial = half_run / CHECKPOINTS / ".tmp-step-000004-99999999"
    partial.mkdir()
    (partial / WEIGHTS).write_bytes(b"half")
    resumed = train(MODEL, RECIPE, half_run)
    assert not partial.exists(), "a dead writer's partial checkpoint is removed on resume"
    whole = train(MODEL, RECIPE, tmp_path / "whole")
    assert (resumed.final_loss, resumed.val_loss) == (whole.final_loss, whole.val_loss)


def test_checkpoint_files_get_the_mode_of_a_plain_open(half_run: Path):
    ckpt = checkpoint_dirs(half_run)[-1]
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in ckpt.iterdir()}
    umask = os.umask(0)
    os.umask(umask)
    assert modes[WEIGHTS] == 0o666 & ~umask, modes
    assert len(set(modes.values())) == 1, modes


GARBLED = [
    ("train.json", b"\xff\xfe", DataError, "train.json is not valid JSON"),
    ("train.json", b"[" * 100_000, DataError, "train.json is not valid JSON"),
    ("train.json", b'{"status": 3}', DataError, "train.json is not a training result"),
    ("spec.json", b"[]", DataError, "spec.json holds list"),
    ("spec.json", b'{"recipe": 3}', ConfigError, "holds a different run"),
]


@pytest.mark.parametrize(("name", "garbage", "error", "message"), GARBLED)
def test_garbled_run_records_are_one_named_error(half_run: Path, name, garbage, error, message):
    (half_run / name).write_bytes(garbage)
    with pytest.raises(error, match=message):
        train(MODEL, RECIPE, half_run)
