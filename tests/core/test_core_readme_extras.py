"""Issue 57 item 2: a README command that needs an extra `make demo` does not install says so
at the end of its line (`# … [hf]`), and the extra it names holds the package it imports."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]
NEEDS = (
    (re.compile(r"archaudit export hf\b"), "hf", "transformers"),
    (re.compile(r"\.gguf\b"), "hf", "gguf"),
    (re.compile(r"--tracker wandb\b"), "wandb", "wandb"),
    (re.compile(r"--tracker mlflow\b"), "mlflow", "mlflow-skinny"),
    (re.compile(r"--tracker tensorboard\b"), "tensorboard", "tensorboard"),
    (re.compile(r"\.parquet\b|--frame\b"), "frames", "pyarrow"),
)
"""(what a command line says, the extra it needs, a package that extra must hold)."""


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return [line for block in blocks for line in block.splitlines() if "archaudit" in line]


def demo_extras() -> set[str]:
    """The extras `make demo` installs (the Makefile's BASE stamp: `.stamp-stats+report`)."""
    base = re.search(r"^BASE := \.venv/\.stamp-(\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert base is not None
    return set(base.group(1).split("+"))


def test_each_readme_command_that_needs_an_extra_names_it():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = extras["optional-dependencies"]
    unlabelled = []
    for line in readme_commands():
        for pattern, extra, package in NEEDS:
            if not pattern.search(line):
                continue
            assert extra not in demo_extras()
            assert any(req.startswith(package) for req in extras[extra]), (extra, package)
            if not line.rstrip().endswith(f"[{extra}]"):
                unlabelled.append(f"{line.strip()}  (needs [{extra}])")
    assert not unlabelled, "README commands without their extra:\n" + "\n".join(unlabelled)


def test_the_readme_shows_commands_that_need_extras():
    """The check above looks at something: the README does show such commands."""
    assert sum(any(p.search(line) for p, _, _ in NEEDS) for line in readme_commands()) >= 3
