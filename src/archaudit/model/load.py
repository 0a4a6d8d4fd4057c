"""A trained model back from its run directory: the config from spec.json, the weights from a
checkpoint's safetensors file. Needs nothing from the trainer, so evaluators import only this."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from archaudit import checkpoint_io
from archaudit.config import ModelConfig, build
from archaudit.data.tokenizers import Tokenizer, load_tokenizer
from archaudit.errors import ConfigError, DataError
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
    spec = read_run_spec(spec_file)
    ckpt = (
        checkpoint_io.checked(path)
        if checkpoint_step(path) is not None
        else checkpoint_io.newest(run)
    )
    if ckpt is None:
        raise DataError(f"{run} has no valid checkpoint to evaluate")
    _warn_if_unfinished(run, ckpt, spec)
    try:
        model = build_model(build(ModelConfig, spec["model"], section="model"))
    except ConfigError as err:
        raise DataError(f"{spec_file}: {err}") from None
    checkpoint_io.read_weights(model, ckpt)
    model.to(device).eval()
    tok_file = run / TOKENIZER
    tokenizer = load_tokenizer(
        f"hf:{tok_file}" if tok_file.is_file() else str(spec.get("tokenizer"))
    )
    return model, tokenizer


def read_run_spec(path: Path) -> dict[str, Any]:
    """spec.json with the fields loading needs checked: `model` a table, `tokenizer` a
    string, `recipe.steps` (when present) a whole number. A torn or edited file is one line
    naming it, not a KeyError deep inside loading."""
    spec = read_json_object(path)
    if spec is None:  # pragma: no cover - the caller checked that it exists
        raise DataError(f"{path} does not exist")
    recipe = spec.get("recipe", {})
    steps = recipe.get("steps") if isinstance(recipe, dict) else None
    problems = [
        ("model", "a table of the model's config", isinstance(spec.get("model"), dict)),
        ("tokenizer", "a tokenizer name", isinstance(spec.get("tokenizer"), str)),
        ("recipe", "a table", isinstance(recipe, dict)),
        ("recipe.steps", "a whole number", steps is None or type(steps) is int),
    ]
    for key, expected, ok in problems:
        if not ok:
            raise DataError(
                f"{path}: {key} must be {expected}; the run's spec is damaged (rerun the "
                "training, or restore spec.json from a copy)"
            )
    return spec


def _warn_if_unfinished(run: Path, ckpt: Path, spec: dict) -> None:
    """A run stopped before its last step (interrupted, still training) is scored as it is,
    but not silently: its numbers are not those of the trained model."""
    step, total = checkpoint_step(ckpt), spec.get("recipe", {}).get("steps")
    if step is not None and total and step < total:
        warn(
            f"{run} stopped at step {step} of {total} (interrupted or still training): scoring "
            "that checkpoint; rerun the training to finish it first"
        )
