"""`archaudit init`: a commented starter audit file that plans as written."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from string import Template

from archaudit.audit.setup.spec import SUITE_PREFIX
from archaudit.errors import ConfigError
from archaudit.files import atomic_write_text, refuse_link

TEMPLATE = Path(__file__).with_name("templates") / "audit.toml"
DEFAULT_ARMS = ("qk_norm", "softpick", "post_ln", "geglu")
ADVICE_FILE = TEMPLATE.with_name("advice.json")
"""Each known starter's advice under `[seeds]`, by `advice_key` of its arms: what `plan
--no-probe --until-settled` computes for that file (generated: `python -m
archaudit.devtools.readme_numbers --write`)."""
GENERIC_ADVICE = (
    "`archaudit plan FILE --until-settled` prints their MDE and the loop's runs beside the "
    "fixed design of the same power"
)
"""The advice for arms without a generated one (`ADVICE_FILE`)."""
ADVICE_INDENT = " " * 18 + "# "


def advice_key(arms: Sequence[str]) -> str:
    return ",".join(arms)


def seeds_advice(arms: Sequence[str], file: str) -> str:
    """The comment lines under `[seeds] arms`: the generated advice for these arms, else the
    generic one, wrapped at 100 columns."""
    try:
        known = json.loads(ADVICE_FILE.read_text())
    except (OSError, ValueError):
        known = {}
    text = known.get(advice_key(arms)) if isinstance(known, dict) else None
    line = f"{text if isinstance(text, str) else GENERIC_ADVICE.replace('FILE', file)}."
    lines = textwrap.wrap(line, 100, initial_indent=ADVICE_INDENT, subsequent_indent=ADVICE_INDENT)
    return "\n".join(lines)


def starter_text(path: Path, *, arms: Sequence[str] = DEFAULT_ARMS) -> str:
    """The starter file for `path`, with these arms: modification names, compositions (a+b)
    or `suite:NAME` for a modification suite. An unknown one fails here, with did-you-mean."""
    from archaudit.mods import get_suite, resolve_arm

    for entry in arms:
        if entry.startswith(SUITE_PREFIX):
            get_suite(entry.removeprefix(SUITE_PREFIX))
        else:
            resolve_arm(entry)
    return Template(TEMPLATE.read_text()).substitute(
        name=path.stem,
        arms=json.dumps(list(arms)),
        file=path.name,
        advice=seeds_advice(arms, path.name),
    )


def write_starter(
    path: str | Path, *, arms: Sequence[str] = DEFAULT_ARMS, force: bool = False
) -> Path:
    path = Path(path)
    refuse_link(path, "the audit file")  # also with --force: the link's target is not ours
    if path.exists() and not force:
        raise ConfigError(f"{path} exists; choose another name or pass --force to overwrite it")
    text = starter_text(path, arms=arms)
    atomic_write_text(path, text)
    return path
