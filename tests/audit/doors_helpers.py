"""Fixtures shared by the tests of the output doors (issue 36): a tiny trained run, its Hugging
Face export, a two-item suite and lm-eval output, each made once per module."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from archaudit.config import ModelConfig, Recipe

LMEVAL = Path(__file__).resolve().parents[1] / "data" / "lmeval" / "smollm2"
TINY_MODEL = ModelConfig(d_model=32, n_layers=2, n_heads=4, context_length=32)
TINY_RECIPE = Recipe(
    steps=2, batch_tokens=256, lr=3e-2, corpus_chars=20_000, device="cpu", eval_every=2,
    checkpoint_every=2,
)  # fmt: skip
SUITE = '[[tasks]]\nname = "toy"\nformat = "multiple_choice"\npath = "toy.jsonl"\n'
TOY = [{"query": f"what follows {k}?", "choices": [str(k + 1), "cat"], "gold": 0} for k in range(2)]


def train_tiny(out: Path) -> Path:
    from archaudit.train import train

    assert train(TINY_MODEL, TINY_RECIPE, out, seed=0).status == "ok"
    return out


def write_suite(folder: Path) -> Path:
    """A one-task suite of two items, its data beside it (pass the folder as --data-root)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "toy.jsonl").write_text("\n".join(json.dumps(r) for r in TOY) + "\n")
    (folder / "suite.toml").write_text(SUITE)
    return folder / "suite.toml"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """{"run": a trained run, "hf": its export, "suite": a suite file, "lmeval": lm-eval
    output with runs under <arm>/seed-<k>/}."""
    pytest.importorskip("transformers")
    from archaudit.export import export_hf

    root = tmp_path_factory.mktemp("doors")
    run = train_tiny(root / "run")
    export_hf(run, root / "hf")
    shutil.copytree(LMEVAL, root / "lmeval")
    return {"run": run, "hf": root / "hf", "suite": write_suite(root / "suite"),
            "lmeval": root / "lmeval"}  # fmt: skip


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative path → bytes), for byte-identity checks."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def python() -> str:
    return sys.executable
