"""A trained model back from its run directory: the config from spec.json, the weights from a
checkpoint's safetensors file. Needs nothing from the trainer, so evaluators import only this."""

from __future__ import annotations

from pathlib import Path

import torch

from archaudit import checkpoint_io
from archaudit.config import ModelConfig, build
from archaudit.data.tokenizers import Tokenizer, load_tokenizer
from archaudit.errors import DataError
from archaudit.files import read_json_object
from archaudit.model.transformer import Transformer, build_model
from archaudit.progress import warn
from archaudit.rundir import SPEC, TOKENIZER, checkpoint_step, run_dir_of


def load_model(
    path: str | Path, device: str | torch.device = "cpu"
) -> tuple[Transformer, Tokenizer]:
    """Load a trained model for evaluation: `path` is a run directory (its newest valid
    checkpoint) or one `step-*` checkpoint folder. Returns (model in eval mode, tokenizer)."""
    path = Path(path)
    run = run_dir_of(path)
    spec_file = run / SPEC
    if not spec_file.is_file():
        raise DataError(f"{path} is not an archaudit run directory (no {SPEC} in {run})")
    spec = read_json_object(spec_file) or {}
    if not isinstance(spec.get("model"), dict) or not isinstance(spec.get("recipe", {}), dict):
        raise DataError(f"{spec_file}: no 'model' table (is the run's spec.json edited or torn?)")
    ckpt = (
        checkpoint_io.checked(path)
        if checkpoint_step(path) is not None
        else checkpoint_io.newest(run)
    )
    if ckpt is None:
        raise DataError(f"{run} has no valid checkpoint to evaluate")
    _warn_if_unfinished(run, ckpt, spec)
    model = build_model(build(ModelConfig, spec["model"], section="model"))
    checkpoint_io.read_weights(model, ckpt)
    model.to(device).eval()
    tok_file = run / TOKENIZER
    tokenizer = load_tokenizer(
        f"hf:{tok_file}" if tok_file.is_file() else str(spec.get("tokenizer"))
    )
    return model, tokenizer


def _warn_if_unfinished(run: Path, ckpt: Path, spec: dict) -> None:
    """A run stopped before its last step (interrupted, still training) is scored as it is,
    but not silently: its numbers are not those of the trained model."""
    step, total = checkpoint_step(ckpt), spec.get("recipe", {}).get("steps")
    if step is not None and total and step < total:
        warn(
            f"{run} stopped at step {step} of {total} (interrupted or still training): scoring "
            "that checkpoint; rerun the training to finish it first"
        )
