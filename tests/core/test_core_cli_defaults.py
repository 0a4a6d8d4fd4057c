"""The judging flags are generated from `JudgeOptions`: each default is written once, in the
dataclass, and every command shows it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from typer.testing import CliRunner

from archaudit.cli import app, register_commands
from archaudit.stats.choices.options import JudgeOptions

CLI = Path(__file__).resolve().parents[2] / "src" / "archaudit" / "cli"
DEFAULTS = {f.name: f.default for f in dataclasses.fields(JudgeOptions)}


def literal_defaults(path: Path) -> list[tuple[str, object]]:
    """(parameter, default) of every command parameter whose default is a literal."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            args = node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.args) - len(node.args.defaults))
            defaults += node.args.defaults + node.args.kw_defaults
            for arg, default in zip(args, defaults, strict=True):
                if isinstance(default, ast.Constant):
                    found.append((arg.arg, default.value))
    return found


def test_no_judging_default_is_written_twice_in_the_cli():
    repeated = [
        f"{path.name}: {name} = {value!r}"
        for path in sorted(CLI.glob("*.py"))
        for name, value in literal_defaults(path)
        if name in DEFAULTS and value is not None and value == DEFAULTS[name]
    ]
    assert not repeated, f"write these as judge flags (JudgeOptions holds them): {repeated}"


def test_every_judging_command_shows_the_dataclass_defaults():
    register_commands()
    for command in (["stats", "verdicts"], ["stats", "power"], ["simulate-null"]):
        text = " ".join(
            CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).output.split()
        )
        assert "[default: holm]" in text and "[default: 0.05]" in text, command
