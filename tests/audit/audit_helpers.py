"""Helpers for the audit tests: a tiny audit (seconds per run) as a tree and as TOML, and the
CLI in a fresh process."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from archaudit.audit.launcher.launch import cli_command

TINY: dict[str, Any] = {
    "name": "tiny",
    "arms": ["qk_norm"],
    "seeds": {"noise_floor": 2, "arms": 1},
    "eval": {"suite": ""},
    "recipe": {
        "steps": 12,
        "batch_tokens": 512,
        "corpus_chars": 100_000,
        "eval_every": 6,
        "eval_batches": 2,
        "checkpoint_every": 3,
    },
    "scales": {"xs": {"d_model": 32, "n_layers": 1, "n_heads": 2, "context_length": 32}},
    "executor": {"workers": 2, "threads": 1, "heartbeat_s": 0.5, "stale_after_s": 5.0},
}


def toml_value(value: Any) -> str:
    """One TOML value; tables become inline tables, so any tree is one valid line per key."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items())
            + "}"
        )
    raise TypeError(value)


def to_toml(tree: dict[str, Any]) -> str:
    return "".join(f"{json.dumps(str(k))} = {toml_value(v)}\n" for k, v in tree.items())


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` applied; a dict value merges one level deep."""
    tree = copy.deepcopy(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(tree.get(key), dict):
            tree[key] = {**tree[key], **value}
        else:
            tree[key] = value
    return tree


def archaudit(*args: str, **kwargs: Any) -> subprocess.CompletedProcess:
    """Run the CLI in a fresh process, as a user (or an executor) would."""
    return subprocess.run(cli_command(*args), capture_output=True, text=True, **kwargs)


class Blocked(BaseException):
    """Raised by `alarm_after`: no handler of an OSError (TimeoutError is one) can swallow it."""


@contextlib.contextmanager
def alarm_after(seconds: int) -> Iterator[None]:
    """A command that waits on a FIFO fails its case instead of hanging the suite."""

    def hung(*_: Any) -> None:
        raise Blocked("the command blocked (a FIFO read?)")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


STRESS_AUDIT = """
name = "s"
arms = ["post_ln"]
[seeds]
noise_floor = 2
[eval]
suite = ""
[recipe]
steps = 4
batch_tokens = 256
corpus_chars = 20000
eval_every = 2
[scales.t]
d_model = 16
n_layers = 1
n_heads = 2
context_length = 16
"""
"""A one-layer audit of post_ln for the stress tests, before its `[stress]` section."""


def stress_audit(tmp_path: Path, stress: str = "") -> Path:
    """STRESS_AUDIT with `stress` (a `[stress]` section) appended, written to tmp_path/a.toml."""
    path = tmp_path / "a.toml"
    path.write_text(STRESS_AUDIT + stress)
    return path
