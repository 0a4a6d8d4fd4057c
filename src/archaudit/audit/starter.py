"""`archaudit init`: a commented starter audit file that plans as written."""

from __future__ import annotations

import json
from pathlib import Path
from string import Template

from archaudit.errors import ConfigError

TEMPLATE = Path(__file__).with_name("templates") / "audit.toml"
DEFAULT_ARMS = ("qk_norm", "softpick", "post_ln", "geglu")


def starter_text(path: Path, *, suite: str | None = None) -> str:
    """The starter file for `path`; with `suite`, its arms are that modification suite."""
    if suite is not None:
        from archaudit.mods import get_suite

        get_suite(suite)  # an unknown suite fails here with did-you-mean
    arms = [f"suite:{suite}"] if suite else list(DEFAULT_ARMS)
    return Template(TEMPLATE.read_text()).substitute(
        name=path.stem, arms=json.dumps(arms), file=path.name
    )


def write_starter(path: str | Path, *, suite: str | None = None, force: bool = False) -> Path:
    path = Path(path)
    if path.exists() and not force:
        raise ConfigError(f"{path} exists; choose another name or pass --force to overwrite it")
    text = starter_text(path, suite=suite)
    path.write_text(text)
    return path
